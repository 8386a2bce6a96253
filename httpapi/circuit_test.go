package httpapi_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call the circuit breaker holds back says when to call again, in
// Retry-After and in its execution's error; failures alice alone met hold
// back alice alone (contract section 28), and bob's call reaches the
// provider.
func TestHeldBackCallSaysRetryAfter(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	var failing atomic.Bool
	var hits atomic.Int64
	failing.Store(true)
	healthy := a.upper.inner
	a.upper.inner = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":"this query cannot be answered"}`))
			return
		}
		healthy.ServeHTTP(w, r)
	})

	call := func(key, idemKey string) reply {
		t.Helper()
		r := a.call(key, "earthquake-search", idemKey, callBody(a.quote(key, "earthquake-search"), quakeInput))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		return r
	}
	for i := range 5 {
		r := call(aliceKey, fmt.Sprintf("fail-%d", i))
		assert.Empty(t, r.header.Get("Retry-After"), "a failure the provider answered")
	}
	require.EqualValues(t, 5, hits.Load())

	heldBody := callBody(a.quote(aliceKey, "earthquake-search"), quakeInput)
	held := a.call(aliceKey, "earthquake-search", "held", heldBody)
	require.Equal(t, http.StatusOK, held.status, "%s", held.body)
	assert.Equal(t, "30", held.header.Get("Retry-After"))
	e := held.json(t)["error"].(map[string]any)
	assert.Equal(t, "upstream_unavailable", e["code"])
	assert.EqualValues(t, 30, e["retryAfterSeconds"])
	assert.EqualValues(t, 5, hits.Load(), "held back before the provider")
	// A retry of the key replays the result, without the header: the wait
	// it named is not the one left.
	again := a.call(aliceKey, "earthquake-search", "held", heldBody)
	assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	assert.Empty(t, again.header.Get("Retry-After"))

	failing.Store(false)
	bobs := call(bobKey, "bob-1")
	assert.Equal(t, "completed", bobs.json(t)["status"])
	assert.Empty(t, bobs.header.Get("Retry-After"))
	assert.EqualValues(t, 6, hits.Load())
}
