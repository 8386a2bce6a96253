package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/goalprovider"
)

// heldUpstream is the goal provider, counting every request that reaches
// it and holding the first one until its caller goes away, as a provider
// still working when the gateway is killed would.
type heldUpstream struct {
	arrivals atomic.Int64
	held     chan struct{} // closed when the first request arrives
}

func (u *heldUpstream) handler() http.Handler {
	goal := goalprovider.New()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.arrivals.Add(1) == 1 {
			_, _ = io.Copy(io.Discard, r.Body)
			close(u.held)
			// Released by the gateway's death: SIGKILL closes its
			// connection. Nothing is answered, so nothing could be stored.
			<-r.Context().Done()
			return
		}
		goal.ServeHTTP(w, r)
	})
}

// TestServerWithPostgresTakesOverAfterKill9 runs the server binary on
// PostgreSQL (when TOOLGATE_TEST_POSTGRES_URL names one) and kills it with
// SIGKILL while a paid call is at its upstream, so the call's key is left
// claimed, its lease held and its amount reserved by a process that is
// gone. A new process on the same database refuses the retry while the
// lease lasts, then takes the call over: the tool runs once more and the
// execution completes, charged once; a further retry replays it without
// reaching the upstream.
func TestServerWithPostgresTakesOverAfterKill9(t *testing.T) {
	t.Parallel()
	dbURL := os.Getenv("TOOLGATE_TEST_POSTGRES_URL")
	if dbURL == "" {
		t.Skip("TOOLGATE_TEST_POSTGRES_URL is not set")
	}
	// The daily window is read across the kill: one that ends halfway
	// through says nothing about a double reservation.
	untilPastMidnight(t, time.Minute)
	start := time.Now()
	up := &heldUpstream{held: make(chan struct{})}
	upstream := httptest.NewServer(up.handler())
	// A cleanup, not a defer, so that it runs after startProcess's: a
	// failing test kills the server first, which releases the held request
	// that Close waits for.
	t.Cleanup(upstream.Close)

	const lease = 3 * time.Second
	key := randomKey(t, "tg_test_pg_kill9_")
	// Short enough for a test: a killed call is taken over after 3 s.
	path := killConfig(t, dbURL, lease, upstream.URL, key, map[string]any{"paymentVerified": true, "endpointVerified": true})
	input := map[string]any{"goal": "survive a kill", "step": 2}
	const idemKey = "pg-kill9-1"

	// First process: the call is admitted and at its upstream when the
	// process is killed.
	srv, base := startServer(t, []string{"-config", path})
	c := client{t: t, base: base, key: key}
	quoteID, digest, _ := c.quote("goal-data")
	admitted := killAtProvider(t, srv, c, up, quoteID, digest, idemKey, input)
	assert.NotContains(t, srv.stderr.String(), key)
	assert.NotContains(t, srv.stdout.String(), key)
	assert.NotContains(t, srv.stderr.String(), dbURL, "the database URL may hold a password: it is never logged")

	// Second process, on the same database.
	srv, base = startServer(t, []string{"-config", path})
	c.base = base
	assert.Equal(t, "postgres", lastStarted(t, srv)["storage"])

	// The abandoned run is neither finished nor charged: the audit trail
	// lists finished executions, the spend summary completed ones.
	r := c.do(http.MethodGet, "/v1/executions", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Empty(t, r.json(t)["executions"], "%s", r.body)

	if time.Since(admitted) < lease-time.Second { // a slow restart may have used the lease up
		r = c.call("goal-data", quoteID, digest, idemKey, input)
		assert.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		assert.Equal(t, "idempotency_key_in_use", errorCode(t, r), "the killed call's lease still holds its key")
	} else {
		t.Logf("restarting took %s of the %s lease: not checking the refusal while it holds", time.Since(admitted), lease)
	}
	assert.EqualValues(t, 1, up.arrivals.Load(), "a retry refused for the lease never reaches the upstream")

	// After the lease, the same request takes the call over and runs it.
	time.Sleep(time.Until(admitted.Add(lease + 200*time.Millisecond)))
	took := c.call("goal-data", quoteID, digest, idemKey, input)
	require.Equal(t, http.StatusOK, took.status, "%s", took.body)
	exec := took.json(t)
	assert.Equal(t, "completed", exec["status"], "taken over after its lease: %s", took.body)
	assert.Empty(t, took.header.Get("Idempotent-Replayed"), "a takeover runs the call, it does not replay it")
	execID := took.header.Get("Toolgate-Execution-Id")
	require.NotEmpty(t, execID)
	assert.Equal(t, execID, exec["id"])
	assert.Equal(t, "0.1100", exec["cost"].(map[string]any)["totalUsd"], "%s", took.body)
	assert.EqualValues(t, 2, up.arrivals.Load(), "the killed attempt and the takeover, each once")

	// And then it is finished: a retry replays it, byte for byte.
	assertReplays(t, c, "goal-data", took, quoteID, digest, idemKey, input)
	assert.EqualValues(t, 2, up.arrivals.Load(), "a replay never reaches the upstream")

	// One execution, the one the takeover ran, charged once: the audit
	// trail, the spend summary and the daily window, which counts the
	// ledger the kill left a reservation in, all say so.
	r = c.do(http.MethodGet, "/v1/executions", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	items := r.json(t)["executions"].([]any)
	require.Len(t, items, 1, "%s", r.body)
	listed := items[0].(map[string]any)
	assert.Equal(t, execID, listed["id"])
	assert.Equal(t, "completed", listed["status"])
	// since is explicit: the default, the month's start, could fall
	// between the kill and now.
	since := url.QueryEscape(start.Add(-time.Minute).UTC().Format(time.RFC3339))
	r = c.do(http.MethodGet, "/v1/spend?groupBy=tool&since="+since, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	spend := r.json(t)
	assert.Equal(t, "0.1100", spend["totalUsd"], "%s", r.body)
	groups := spend["groups"].([]any)
	require.Len(t, groups, 1, "%s", r.body)
	assert.Equal(t, "goal-data", groups[0].(map[string]any)["key"])
	assert.EqualValues(t, 1, groups[0].(map[string]any)["count"], "%s", r.body)
	_, _, q := c.quote("goal-data")
	tool := q["controls"].(map[string]any)["tool"].(map[string]any)
	assert.Equal(t, "0.1100", tool["dailyUsedUsd"], "the reservation became the charge, not a second one: %v", tool)

	// The server's own account: it says it took the call over, and never
	// shows the key or the database URL.
	require.Equal(t, 0, srv.stop(exitTimeout))
	var tookOver bool
	for _, rec := range srv.logLines() {
		tookOver = tookOver || (rec["msg"] == "took over an abandoned call" && rec["execution"] == execID)
	}
	assert.True(t, tookOver, "a log line for the takeover:\n%s", srv.stderr)
	assert.NotContains(t, srv.stderr.String(), key)
	assert.NotContains(t, srv.stdout.String(), key)
	assert.NotContains(t, srv.stderr.String(), dbURL)
}

// killConfig is the configuration of the kill tests: storage, a lease of
// lease (a killed call is taken over after it, and its provider gives up
// after 2 s), one principal of its own with key, so that runs sharing a
// database never meet, allowed a dollar a day of goal-data, whose requests
// go to providerURL, with trust as goal-data's trust.
func killConfig(t *testing.T, storage string, lease time.Duration, providerURL, key string, trust map[string]any) string {
	t.Helper()
	return writeConfig(t, map[string]any{
		"listen":           "127.0.0.1:0",
		"storage":          storage,
		"idempotencyLease": lease.String(),
		"upstreamTimeout":  "2s",
		"principals": []any{map[string]any{"id": randomKey(t, "kill9-"), "apiKeys": []string{key},
			"spendControls": map[string]any{
				"tools": map[string]any{"goal-data": map[string]any{"allowed": true, "dailyLimitUsd": "1.0000"}}}}},
		"upstreams": map[string]string{"goal-data": providerURL},
		"trust":     map[string]any{"goal-data": trust},
	})
}

// killAtProvider sends a goal-data call through srv and kills srv with
// SIGKILL once the call is held at up, so its key is left claimed, its
// lease held and its amount reserved by a process that is gone. It returns
// when the call was admitted, or a moment after: its lease began before.
func killAtProvider(t *testing.T, srv *process, c client, up *heldUpstream, quoteID, digest, idemKey string, input any) time.Time {
	t.Helper()
	// Its caller never hears back: the process dies with the call in flight.
	go func(c client) { _, _ = c.sendCall("goal-data", quoteID, digest, idemKey, input) }(c)
	select {
	case <-up.held:
	case <-time.After(exitTimeout):
		t.Fatal("the call never reached the provider")
	}
	admitted := time.Now()
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
	srv.wait(exitTimeout)
	return admitted
}
