package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/goalprovider"
	"github.com/toolgate/toolgate/tools/recorded"
)

// countingUpstream serves the recorded providers and the goal provider,
// counts every request that reaches it, and holds the first goal-data
// request for goal "hang" until its caller goes away, as a provider that
// never answers would.
type countingUpstream struct {
	requests atomic.Int64
	hangOnce sync.Once
	hanging  chan struct{} // closed when the held request arrives
}

func (u *countingUpstream) handler() http.Handler {
	recordings, goal := recorded.Handler(), goalprovider.New()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		if r.URL.Path != goalprovider.Path {
			recordings.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if strings.Contains(string(body), `"goal":"hang"`) {
			held := false
			u.hangOnce.Do(func() { held = true })
			if held {
				close(u.hanging)
				<-r.Context().Done() // the gateway died with the call in flight
				return
			}
		}
		goal.ServeHTTP(w, r)
	})
}

// untilPastMidnight waits, on the rare run that starts just before a UTC
// midnight, until the day has turned: the test checks a daily spend window
// across restarts, and a window that ends halfway through says nothing.
func untilPastMidnight(t *testing.T, margin time.Duration) {
	now := time.Now().UTC()
	next := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	if wait := next.Sub(now); wait < margin {
		t.Logf("waiting %s for the UTC day to turn", wait)
		time.Sleep(wait + time.Second)
	}
}

// TestServerWithSQLiteSurvivesRestarts runs the server binary on a SQLite
// file, stops it with SIGTERM and restarts it, then kills it with SIGKILL
// in the middle of a call and restarts it again. After each restart every
// finished call replays byte for byte without reaching the upstream, a
// quote issued before the restart is still usable, the spend and rate
// windows go on where they were, and the call that was killed mid-flight is
// refused while its lease lasts, then taken over and charged once.
func TestServerWithSQLiteSurvivesRestarts(t *testing.T) {
	t.Parallel()
	untilPastMidnight(t, 2*time.Minute)
	up := &countingUpstream{hanging: make(chan struct{})}
	upstream := httptest.NewServer(up.handler())
	defer upstream.Close()

	const lease = 3 * time.Second
	key := randomKey(t, "tg_test_sqlite_")
	path := writeConfig(t, map[string]any{
		"listen":  "127.0.0.1:0",
		"storage": "sqlite:toolgate.db", // beside the config file
		// Short enough for a test: a killed call is taken over after
		// 3 s, and its upstream would have given up after 2 s.
		"idempotencyLease": lease.String(),
		"upstreamTimeout":  "2s",
		"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{key},
			"spendControls": map[string]any{"rateLimitPerMinute": 6,
				"tools": map[string]any{"goal-data": map[string]any{"allowed": true, "dailyLimitUsd": "0.3300"}}}}},
		"upstreams": upstreamsAt(upstream.URL, upstream.URL),
		"trust":     map[string]any{"goal-data": map[string]any{"paymentVerified": true, "endpointVerified": true}},
	})
	dbPath := filepath.Join(filepath.Dir(path), "toolgate.db")
	quake := map[string]any{"starttime": "2024-09-25"}
	goal := func(g string) map[string]any { return map[string]any{"goal": g, "step": 1} }

	// First run: two calls, a quote kept for later, a clean stop.
	srv, base := startServer(t, []string{"-config", path})
	alice := client{t: t, base: base, key: key}
	qE1, digest, _ := alice.quote("earthquake-search")
	e1 := alice.call("earthquake-search", qE1, digest, "e1", quake)
	require.Equal(t, http.StatusOK, e1.status, "%s", e1.body)
	require.Equal(t, "completed", e1.json(t)["status"], "%s", e1.body)
	qG1, gdigest, _ := alice.quote("goal-data")
	g1 := alice.call("goal-data", qG1, gdigest, "g1", goal("first"))
	require.Equal(t, "completed", g1.json(t)["status"], "%s", g1.body)
	kept, _, _ := alice.quote("goal-data")
	require.Equal(t, 0, srv.stop(exitTimeout))
	_, err := os.Stat(dbPath)
	require.NoError(t, err, "the relative path is the config file's neighbour")
	assert.Equal(t, "sqlite", lastStarted(t, srv)["storage"])

	// Second run, after SIGTERM.
	srv, base = startServer(t, []string{"-config", path})
	alice.base = base
	before := up.requests.Load()
	assertReplays(t, alice, "earthquake-search", e1, qE1, digest, "e1", quake)
	assertReplays(t, alice, "goal-data", g1, qG1, gdigest, "g1", goal("first"))
	assert.Equal(t, before, up.requests.Load(), "replays never reach the upstream")
	g2 := alice.call("goal-data", kept, gdigest, "g2", goal("second"))
	require.Equal(t, "completed", g2.json(t)["status"], "a quote from before the restart is still usable: %s", g2.body)
	keptQuake, _, _ := alice.quote("earthquake-search")

	// A call in flight when the process is killed.
	hungQuote, _, _ := alice.quote("goal-data")
	go func() { _, _ = alice.sendCall("goal-data", hungQuote, gdigest, "g3", goal("hang")) }()
	select {
	case <-up.hanging:
	case <-time.After(exitTimeout):
		t.Fatal("the call never reached the upstream")
	}
	admitted := time.Now() // the lease began a moment before
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGKILL))
	srv.wait(exitTimeout)

	// Third run, after SIGKILL.
	srv, base = startServer(t, []string{"-config", path})
	alice.base = base
	before = up.requests.Load()
	assertReplays(t, alice, "earthquake-search", e1, qE1, digest, "e1", quake)
	assertReplays(t, alice, "goal-data", g1, qG1, gdigest, "g1", goal("first"))
	assertReplays(t, alice, "goal-data", g2, kept, gdigest, "g2", goal("second"))
	assert.Equal(t, before, up.requests.Load(), "replays never reach the upstream")

	if time.Since(admitted) < lease-time.Second { // a slow restart may have used the lease up
		r := alice.call("goal-data", hungQuote, gdigest, "g3", goal("hang"))
		assert.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		assert.Equal(t, "idempotency_key_in_use", errorCode(t, r), "the killed call's lease still holds its key")
	} else {
		t.Logf("restarting took %s of the %s lease: not checking the refusal while it holds", time.Since(admitted), lease)
	}
	time.Sleep(time.Until(admitted.Add(lease + 200*time.Millisecond)))
	g3 := alice.call("goal-data", hungQuote, gdigest, "g3", goal("hang"))
	require.Equal(t, http.StatusOK, g3.status, "%s", g3.body)
	assert.Equal(t, "completed", g3.json(t)["status"], "taken over after its lease: %s", g3.body)
	assert.Empty(t, g3.header.Get("Idempotent-Replayed"), "a takeover runs the call, it does not replay it")
	assert.Equal(t, before+1, up.requests.Load(), "the takeover reaches the upstream once")
	assertReplays(t, alice, "goal-data", g3, hungQuote, gdigest, "g3", goal("hang"))

	// Spend window: three goal-data calls of 0.11, the taken-over one
	// charged once, and the daily limit of 0.33 reached.
	_, _, q := alice.quote("goal-data")
	tool := q["controls"].(map[string]any)["tool"].(map[string]any)
	assert.Equal(t, "0.3300", tool["dailyUsedUsd"], "%v", tool)
	qid, _, _ := alice.quote("goal-data")
	r := alice.call("goal-data", qid, gdigest, "g4", goal("fourth"))
	assert.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	assert.Equal(t, "spend_limit_exceeded", errorCode(t, r))

	// Rate window: e1, g1, g2 and g3 began in this minute; the limit is 6.
	e2 := alice.call("earthquake-search", keptQuake, digest, "e2", quake)
	assert.Equal(t, http.StatusOK, e2.status, "a quote from before the kill is still usable: %s", e2.body)
	qid, _, _ = alice.quote("earthquake-search")
	assert.Equal(t, http.StatusOK, alice.call("earthquake-search", qid, digest, "e3", quake).status)
	qid, _, _ = alice.quote("earthquake-search")
	r = alice.call("earthquake-search", qid, digest, "e4", quake)
	assert.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	assert.Equal(t, "rate_limited", errorCode(t, r))

	require.Equal(t, 0, srv.stop(exitTimeout))
	assert.NotContains(t, srv.stderr.String(), key)
}

// assertReplays calls again with a finished call's key and request and
// requires the stored answer, byte for byte, marked as replayed.
func assertReplays(t *testing.T, c client, slug string, first response, quoteID, digest, key string, input any) {
	t.Helper()
	again := c.call(slug, quoteID, digest, key, input)
	require.Equal(t, first.status, again.status, "%s", again.body)
	assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"), key)
	assert.Equal(t, first.header.Get("Toolgate-Execution-Id"), again.header.Get("Toolgate-Execution-Id"), key)
	assert.Equal(t, string(first.body), string(again.body), key)
}

func errorCode(t *testing.T, r response) string {
	t.Helper()
	e, _ := r.json(t)["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// lastStarted is the server's "started" log line. The server prints its
// address on stdout and logs "started" on stderr, and the two pipes are
// read apart, so under load the line can arrive a moment after startServer
// has returned: it is waited for.
func lastStarted(t *testing.T, p *process) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(exitTimeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(p.stderr.String(), `"msg":"started"`) {
			break
		}
	}
	var out map[string]any
	for _, rec := range p.logLines() {
		if rec["msg"] == "started" {
			out = rec
		}
	}
	require.NotNil(t, out, "a started line")
	return out
}
