package loadtest

import (
	"maps"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"
)

// restartRetryBudget bounds the retries of one key after the restart. No
// run holds a key then, so a 409 that outlasts this never ends.
const restartRetryBudget = 20 * time.Second

// TestLoadMemory runs the load on the memory store.
func TestLoadMemory(t *testing.T) {
	t.Parallel()
	set := setup(t)
	r := newRig(t, set, "memory")
	steadyLoad(t, r, nil)
}

// TestLoadPostgres runs the load on PostgreSQL, and checks the store's
// tables against what the callers saw as well.
func TestLoadPostgres(t *testing.T) {
	t.Parallel()
	set := setup(t)
	url := newDatabase(t, postgresURL(t))
	r := newRig(t, set, url)
	steadyLoad(t, r, newLedger(t, url, r))
}

// TestLoadSQLite runs the load on a SQLite file: the process keeps nothing
// of the calls in memory, so its memory must stay flat with no allowance
// for what the memory store would retain.
func TestLoadSQLite(t *testing.T) {
	t.Parallel()
	set := setup(t)
	r := newRig(t, set, "sqlite:toolgate.db")
	steadyLoad(t, r, nil)
}

// steadyLoad runs one window of load on a fresh server, then checks it;
// db is nil but for PostgreSQL.
func steadyLoad(t *testing.T, r *rig, db *ledger) {
	srv := r.start("server")
	l := r.newLoad(srv)
	res := l.run(srv, runOptions{window: r.set.duration, quietAtEnd: true})
	l.resolve(res.calls)

	l.checkKeys(res.calls)
	l.checkExecutions(res.calls)
	l.checkSpend(res.calls, res.start)
	var retained int64
	if db != nil {
		checkStore(l, db, res.calls)
	} else if r.storage == "memory" {
		retained = retainedKiB(res.calls, res.start, r.set.duration)
	}
	checkRSS(l, res.rss, r.set.duration, retained, r.set.strictRSS())
	l.checkExercised(res.calls)
	t.Logf("upstream requests: providers %v, goal-data %v", r.providers.summary(), r.goal.summary())

	srv.stop()
	checkLogs(l, srv)
	l.report("load", res.calls, r.set.duration)
}

// TestLoadShutdownPostgres sends SIGTERM to the server halfway through the
// load. The calls in flight must finish or be refused cleanly, the server
// must exit 0 leaving nothing half-written in the store, and after a restart
// on the same database every key sent before must replay its stored answer
// or run fresh.
func TestLoadShutdownPostgres(t *testing.T) {
	t.Parallel()
	set := setup(t)
	url := newDatabase(t, postgresURL(t))
	r := newRig(t, set, url)
	db := newLedger(t, url, r)

	began := time.Now()
	phase := func(name string) { t.Logf("%s after %s", name, time.Since(began).Round(time.Millisecond)) }
	first := r.start("first")
	phase("started")
	l := r.newLoad(first)
	var signalled time.Time
	res := l.run(first, runOptions{
		window:      set.duration,
		signalAfter: set.duration / 2,
		onSignal: func() {
			signalled = time.Now()
			l.signalAt.Store(signalled.UnixNano())
			first.terminate()
			l.stopped.Store(true)
		},
	})
	phase("callers done")
	if code := first.wait(exitTimeout); code != 0 {
		t.Fatalf("the server exited %d after SIGTERM under load; log tail:\n%s", code, first.tail())
	}
	drained := time.Since(signalled)
	// The upstreams calm down only now: the hangs in flight at the signal
	// were drained through the gateway's deadline.
	r.providers.quiet()
	r.goal.quiet()

	records, executions, reserved := db.unfinished()
	if records+executions+reserved > 0 {
		t.Errorf("after a graceful SIGTERM the store holds %d unfinished idempotency records, %d running executions and %d reserved amounts",
			records, executions, reserved)
	}
	checkLogs(l, first)
	var before int
	for _, c := range res.calls {
		if c.first.Before(signalled) {
			before++
		}
	}
	l.stats.mu.Lock()
	inFlight := maps.Clone(l.stats.inFlight)
	l.stats.mu.Unlock()
	t.Logf("SIGTERM %s into the load: %d keys sent, %d before the signal; requests in flight at the signal ended %s; exit after %s",
		set.duration/2, len(res.calls), before, sortedMap(inFlight), drained.Round(time.Millisecond))
	l.report("before SIGTERM", res.calls, set.duration/2)

	second := r.start("restarted")
	phase("restarted")
	l2 := r.newLoad(second)
	outcomes := l2.retryAfterRestart(res.calls)
	phase("retried")
	t.Logf("after the restart, every key sent again: %s", sortedMap(outcomes))
	l2.checkKeys(res.calls)
	l2.checkExecutions(res.calls)
	l2.checkSpend(res.calls, res.start)
	checkStore(l2, db, res.calls)
	phase("checked")
	second.stop()
	phase("stopped")
	checkLogs(l2, second)
	l2.report("after restart", res.calls, 0)
}

// retryAfterRestart sends every call once more, same key and body. A key
// answered 200 before must replay that execution byte for byte; any other
// must replay what it stored unseen, run fresh, or be refused as before,
// and none may answer 409 for good. It returns the outcomes by name.
func (l *load) retryAfterRestart(calls []*call) map[string]int {
	var mu sync.Mutex
	outcomes := map[string]int{}
	l.parallel(calls, func(_ int, c *call, rng *rand.Rand) {
		earlier := c.execID
		outcome := l.retryOnce(c, earlier, rng)
		mu.Lock()
		outcomes[outcome]++
		mu.Unlock()
	})
	return outcomes
}

func (l *load) retryOnce(c *call, earlier string, rng *rand.Rand) string {
	deadline := time.Now().Add(restartRetryBudget)
	for attempt := 0; attempt < maxCallAttempts; attempt++ {
		if attempt > 0 {
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(backoff(rng, attempt))
		}
		rep := l.send("call", l.r.patient, c.p, http.MethodPost, "/v1/tools/"+c.slug+"/call", c.body, c.key)
		c.attempts++
		if !l.record(c, rep) {
			continue
		}
		replayed := rep.header.Get("Idempotent-Replayed") == "true"
		switch {
		case rep.status != http.StatusOK && earlier != "":
			l.stats.problem("key %s, answered by execution %s before the signal, now answers %d %s", c.key, earlier, rep.status, rep.body)
			return "broken"
		case rep.status != http.StatusOK:
			return "refused " + rep.code()
		case earlier != "" && !replayed:
			l.stats.problem("key %s, answered by execution %s before the signal, ran again as %s", c.key, earlier, rep.header.Get("Toolgate-Execution-Id"))
			return "broken"
		case earlier != "":
			return "replayed an answer seen before"
		case replayed:
			return "replayed an answer never seen"
		}
		return "ran fresh"
	}
	l.stats.problem("key %s still unanswered %s after the restart: last %s", c.key, restartRetryBudget, c.last)
	return "no answer"
}
