package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// After a SIGKILL of the server while a call of a tool that is not
// retry-safe is at its provider, nobody knows whether the provider acted
// on it. Once the dead run's lease ends, a retry with the same key is told
// so (ambiguous) instead of the request being sent a second time, on
// either durable store.
func TestServerKilledMidCallLeavesTheCallAmbiguous(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		killMidCallThenRetry(t, "sqlite:toolgate.db")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dbURL := os.Getenv("TOOLGATE_TEST_POSTGRES_URL")
		if dbURL == "" {
			t.Skip("TOOLGATE_TEST_POSTGRES_URL is not set")
		}
		killMidCallThenRetry(t, dbURL)
	})
}

func killMidCallThenRetry(t *testing.T, storage string) {
	untilPastMidnight(t, time.Minute)
	up := &heldUpstream{held: make(chan struct{})}
	provider := httptest.NewServer(up.handler())
	t.Cleanup(provider.Close)

	const lease = 3 * time.Second
	key := randomKey(t, "tg_test_ambiguous_kill9_")
	// The operator says goal-data's requests must not be sent twice.
	path := killConfig(t, storage, lease, provider.URL, key, map[string]any{"paymentVerified": true, "endpointVerified": true, "retrySafe": false})
	input := map[string]any{"goal": "survive a kill", "step": 2}
	const idemKey = "ambiguous-kill9-1"

	srv, base := startServer(t, []string{"-config", path})
	c := client{t: t, base: base, key: key}
	quoteID, digest, _ := c.quote("goal-data")
	admitted := killAtProvider(t, srv, c, up, quoteID, digest, idemKey, input)

	srv, base = startServer(t, []string{"-config", path})
	c.base = base
	time.Sleep(time.Until(admitted.Add(lease + 200*time.Millisecond)))

	took := c.call("goal-data", quoteID, digest, idemKey, input)
	require.Equal(t, http.StatusOK, took.status, "%s", took.body)
	exec := took.json(t)
	assert.Equal(t, "ambiguous", exec["status"], "%s", took.body)
	assert.Equal(t, "outcome_unknown", exec["error"].(map[string]any)["code"], "%s", took.body)
	assert.Nil(t, exec["output"])
	assert.EqualValues(t, 1, up.arrivals.Load(), "the provider saw the request once: the takeover did not send it again")

	// From then on the key answers with the ambiguous execution.
	again := c.call("goal-data", quoteID, digest, idemKey, input)
	require.Equal(t, http.StatusOK, again.status, "%s", again.body)
	assert.Equal(t, took.body, again.body)
	assert.EqualValues(t, 1, up.arrivals.Load())

	// Its amount stays reserved: counted in the day's use, not charged.
	_, _, q := c.quote("goal-data")
	tool := q["controls"].(map[string]any)["tool"].(map[string]any)
	assert.Equal(t, "0.1100", tool["dailyUsedUsd"], "%v", tool)
	require.Equal(t, 0, srv.stop(exitTimeout))
	assert.NotContains(t, srv.stderr.String(), key)
}
