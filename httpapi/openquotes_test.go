package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
)

// TestOpenQuotesAreCapped holds a caller to its cap of open quotes over
// HTTP: past it a quote is 429 rate_limited, saying when the first open
// quote expires, until one is used or expires; other callers are not
// held; and refused quotes are not calls, so they never use up the
// caller's rate limit.
func TestOpenQuotesAreCapped(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil, func(c *toolgate.Config) { c.MaxOpenQuotes = 3 })
	const quake = "earthquake-search"
	a.quote(aliceKey, quake)
	a.clock.Advance(10 * time.Second)
	second := a.quote(aliceKey, quake)
	a.quote(aliceKey, quake)

	refused := a.do("POST", "/v1/tools/"+quake+"/quote", aliceKey, "{}")
	require.Equal(t, http.StatusTooManyRequests, refused.status, "%s", refused.body)
	assert.Equal(t, "rate_limited", refused.errorCode(t))
	// The first quote expires five minutes after it was made, 290 s from now.
	assert.Equal(t, "290", refused.header.Get("Retry-After"))
	e := refused.json(t)["error"].(map[string]any)
	assert.EqualValues(t, 290, e["retryAfterSeconds"])
	assert.Contains(t, e["message"], "3 open quotes")
	assert.Contains(t, e["message"], t0.Add(5*time.Minute).Format(time.RFC3339))

	// Another caller has a cap of its own.
	a.quote(bobKey, quake)

	// Refused quotes are not calls: seventy of them, more than the
	// caller's 60 calls a minute, leave every call to make.
	for range 70 {
		require.Equal(t, http.StatusTooManyRequests, a.do("POST", "/v1/tools/"+quake+"/quote", aliceKey, "{}").status)
	}

	// A used quote leaves room for one more.
	used := a.call(aliceKey, quake, "use-second", callBody(second, quakeInput))
	require.Equal(t, http.StatusOK, used.status, "%s", used.body)
	a.quote(aliceKey, quake)
	assert.Equal(t, http.StatusTooManyRequests, a.do("POST", "/v1/tools/"+quake+"/quote", aliceKey, "{}").status)

	// So does an expired one, at its expiry: the first, made at t0.
	a.clock.Set(t0.Add(5 * time.Minute))
	a.quote(aliceKey, quake)
	assert.Equal(t, http.StatusTooManyRequests, a.do("POST", "/v1/tools/"+quake+"/quote", aliceKey, "{}").status)
}

// TestOpenQuotesDefaultCap checks the cap a gateway has when none is set:
// 1,000 open quotes (the contract's number, so not the constant), and the
// next refused.
func TestOpenQuotesDefaultCap(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	const defaultCap = 1000
	for i := range defaultCap {
		r := a.do("POST", "/v1/tools/earthquake-search/quote", aliceKey, "{}")
		require.Equal(t, http.StatusCreated, r.status, "quote %d: %s", i+1, r.body)
	}
	r := a.do("POST", "/v1/tools/earthquake-search/quote", aliceKey, "{}")
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	assert.Equal(t, "rate_limited", r.errorCode(t))
	assert.Contains(t, string(r.body), fmt.Sprintf("%d open quotes", defaultCap))
}
