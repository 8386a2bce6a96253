package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/recorded"
)

// TestServerCapsOpenQuotes runs the built server with maxOpenQuotes set:
// the fourth open quote is 429 rate_limited with Retry-After, and a used
// quote makes room for a new one.
func TestServerCapsOpenQuotes(t *testing.T) {
	t.Parallel()
	providers := httptest.NewServer(recorded.Handler())
	defer providers.Close()
	aliceKey := randomKey(t, "tg_test_alice_")
	path := writeConfig(t, map[string]any{
		"listen":        "127.0.0.1:0",
		"storage":       "memory",
		"maxOpenQuotes": 3,
		"principals":    []any{map[string]any{"id": "alice", "apiKeys": []string{aliceKey}}},
		"upstreams":     upstreamsAt(providers.URL, providers.URL),
	})
	_, base := startServer(t, []string{"-config", path})
	alice := client{t: t, base: base, key: aliceKey}

	quoteID, digest, _ := alice.quote("earthquake-search")
	alice.quote("earthquake-search")
	alice.quote("earthquake-search")
	r := alice.do(http.MethodPost, "/v1/tools/earthquake-search/quote", nil)
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	e := r.json(t)["error"].(map[string]any)
	assert.Equal(t, "rate_limited", e["code"])
	assert.Contains(t, e["message"], "3 open quotes")
	// The first quote expires five minutes after it was made.
	wait, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", r.header.Get("Retry-After"))
	assert.True(t, wait > 240 && wait <= 300, "Retry-After %d", wait)

	c := alice.call("earthquake-search", quoteID, digest, "use-first", map[string]any{"starttime": "2024-09-25", "endtime": "2024-09-30"})
	require.Equal(t, http.StatusOK, c.status, "%s", c.body)
	alice.quote("earthquake-search")
}
