package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/storage/storagetest"
)

// outboxEvent is an event of type typ and id id caused at t0.
func outboxEvent(typ, id string) storage.NewEvent {
	return storage.NewEvent{ID: id, Type: typ, CreatedAt: t0,
		Payload: []byte(fmt.Sprintf(`{"type":%q,"data":{"id":%q}}`, typ, id))}
}

// teamAlert is a BudgetAlert of budget team's day t0 at threshold.
func teamAlert(threshold string) storage.BudgetAlert {
	day := t0.Format(time.DateOnly)
	return storage.BudgetAlert{
		Budget: "team", FromDay: day, UntilDay: t0.AddDate(0, 0, 1).Format(time.DateOnly), Threshold: dec(threshold),
		Event: storage.NewEvent{
			ID: "budget.threshold:team:daily:" + threshold + ":" + day, Type: "budget.threshold", CreatedAt: t0,
			Payload: []byte(`{"type":"budget.threshold","data":{"budget":{"id":"team"},"usedUsd":"","limitUsd":"4.0000"}}`),
		},
	}
}

// usedUSD reads data.usedUsd of an alert's payload.
func usedUSD(t *testing.T, payload []byte) string {
	t.Helper()
	var body struct {
		Data struct {
			UsedUSD string `json:"usedUsd"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(payload, &body), "%s", payload)
	return body.Data.UsedUSD
}

// allEvents lists every event of s.
func allEvents(t *testing.T, s storage.Store) []storage.Event {
	t.Helper()
	got, err := s.ListEvents(t.Context(), storage.EventFilter{Limit: 10000})
	require.NoError(t, err)
	return got
}

// Two instances, each claiming from many goroutines at once, never both
// hold one event, and between them deliver each once: the claim's SKIP
// LOCKED and its re-check of a lease just committed are the database's.
func TestOutboxTwoInstancesNeverHoldOneEvent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	stores := twoInstances(t)
	const n = 300
	for i := range n {
		ok, err := stores[i%2].AddEvent(ctx, outboxEvent("approval_request.created", fmt.Sprintf("ev-%03d", i)))
		require.NoError(t, err)
		require.True(t, ok)
	}

	var (
		mu   sync.Mutex
		held = map[string]int{}
	)
	now := t0.Add(time.Second)
	goAll(16, func(i int) {
		s := stores[i%2]
		for {
			got, err := s.ClaimEvents(ctx, storage.ClaimEvents{Now: now, Lease: time.Minute, Limit: 7})
			if !assert.NoError(t, err) || len(got) == 0 {
				return
			}
			mu.Lock()
			for _, e := range got {
				held[e.ID]++
			}
			mu.Unlock()
			for _, e := range got {
				assert.NoError(t, s.EventAttempted(ctx, storage.EventAttempt{ID: e.ID, LeaseToken: e.LeaseToken,
					Now: now, Status: storage.EventDelivered}))
			}
		}
	})
	require.Len(t, held, n, "every event was claimed")
	for id, times := range held {
		assert.Equal(t, 1, times, "event %s held by two claims", id)
	}
	stats, err := stores[1].EventStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"approval_request.created": n}, stats.Delivered, "each counted once")
	assert.Zero(t, stats.Pending)
}

// Two instances finish charges to one budget at once, each finish asking
// for the budget's alerts: each alert is written once, and the one whose
// threshold is the budget's whole spend, reached only by the charge that
// commits last, is written too, with that sum: the alerts' sums wait for
// each other (see lockAlertBudgetsSQL), so the last charge to commit sees
// every other, whichever instance made it.
func TestOutboxAlertOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	stores := []*postgres.Store{openInstance(t, schema), openInstance(t, schema)}
	const calls = 40 // of 0.10: 4.00 in all
	begins := make([]storage.Begin, calls)
	for i := range begins {
		s := stores[i%2]
		q := testQuote(fmt.Sprintf("p%d", i%9), "tool-a", "0.10", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		begins[i] = budgetCall(q, fmt.Sprintf("k%d", i), t0, []string{"team"})
		_, err := s.BeginExecution(ctx, begins[i])
		require.NoError(t, err)
	}
	thresholds := []string{"0.5", "2", "3.95", "4", "4.01"}
	goAll(calls, func(i int) {
		f := testFinish(begins[i], storage.ExecutionCompleted, t0.Add(time.Second))
		for _, th := range thresholds {
			f.Alerts = append(f.Alerts, teamAlert(th))
		}
		assert.NoError(t, stores[i%2].FinishExecution(ctx, f))
	})

	got := map[string]storage.Event{}
	for _, e := range allEvents(t, stores[0]) {
		got[e.ID] = e
	}
	assert.Len(t, got, 4, "every threshold reached, once each; 4.01 never")
	for _, th := range thresholds[:4] {
		e, ok := got[teamAlert(th).Event.ID]
		if !assert.True(t, ok, "the alert at %s", th) {
			continue
		}
		used := dec(usedUSD(t, e.Payload))
		assert.True(t, used.GreaterThanOrEqual(dec(th)), "%s written at %s", th, used)
		assert.True(t, used.LessThanOrEqual(dec("4")), "%s written at %s", th, used)
	}
	assert.Equal(t, "4.0000", usedUSD(t, got[teamAlert("4").Event.ID].Payload), "written by the charge that made 4")
}

// A batch of finishes writes the events of the finishes it writes, in its
// transaction and its round trip, and none of a finish whose lease was
// lost; an alert's payload is byte for byte the one storage.WithUsed
// gives.
func TestOutboxEventsRideInTheFinishBatch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	z := observeSizes(s)

	var begins []storage.Begin
	for i := range 4 {
		q := testQuote(fmt.Sprintf("p%d", i), "tool-a", "1.50", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := budgetCall(q, "k", t0, []string{"team"})
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		begins = append(begins, b)
	}
	ambiguous := testFinish(begins[0], storage.ExecutionAmbiguous, t0.Add(time.Second))
	ambiguous.Events = []storage.NewEvent{outboxEvent("execution.ambiguous", "execution.ambiguous:"+begins[0].ExecutionID.String())}
	charged := testFinish(begins[1], storage.ExecutionCompleted, t0.Add(time.Second))
	charged.Alerts = []storage.BudgetAlert{teamAlert("1"), teamAlert("2")}
	stale := testFinish(begins[2], storage.ExecutionAmbiguous, t0.Add(time.Second))
	stale.LeaseToken = uuid.New()
	stale.Events = []storage.NewEvent{outboxEvent("execution.ambiguous", "execution.ambiguous:"+begins[2].ExecutionID.String())}
	staleCharge := testFinish(begins[3], storage.ExecutionCompleted, t0.Add(time.Second))
	staleCharge.LeaseToken = uuid.New()
	staleCharge.Alerts = []storage.BudgetAlert{teamAlert("0.5")}

	finishes := []storage.Finish{ambiguous, charged, stale, staleCharge}
	errs := make([]error, len(finishes))
	calls := make([]func(), len(finishes))
	for i := range finishes {
		calls[i] = func() { errs[i] = s.FinishExecution(ctx, finishes[i]) }
	}
	inOneBatch(t, queuedFinishes(s), holdFinishes(t, s, schema), calls...)
	assert.Contains(t, z.of("finish"), 4, "the four finishes went in one batch")
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], storage.ErrLeaseLost)
	require.ErrorIs(t, errs[3], storage.ErrLeaseLost)

	got := map[string]storage.Event{}
	for _, e := range allEvents(t, s) {
		got[e.ID] = e
	}
	assert.Len(t, got, 2, "the ambiguous finish's event and the alert at 1; nothing of the lost leases")
	assert.Contains(t, got, ambiguous.Events[0].ID)
	alert, ok := got[teamAlert("1").Event.ID]
	require.True(t, ok)
	want, err := storage.WithUsed(teamAlert("1").Event.Payload, dec("1.50"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(alert.Payload), "the payload WithUsed gives, byte for byte")
	assert.Equal(t, storage.EventPending, alert.Status)
}

// A finish with events and alerts costs the round trip of one without:
// its events add statements to the finish's batch, not round trips.
func TestOutboxFinishAddsNoRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, trips := benchPool(t)
	t.Cleanup(pool.Close)
	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: newSchema(t)})
	require.NoError(t, err)
	admit := func(key string) storage.Begin {
		q := testQuote("alice", "tool-a", "1.50", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := budgetCall(q, key, t0, []string{"team"})
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		return b
	}
	finish := func(b storage.Begin) storage.Finish {
		f := testFinish(b, storage.ExecutionCompleted, t0.Add(time.Second))
		f.Events = []storage.NewEvent{outboxEvent("execution.ambiguous", "ev:"+b.Key)}
		f.Alerts = []storage.BudgetAlert{teamAlert("1")}
		return f
	}
	// The statements' first use on a connection prepares them.
	require.NoError(t, s.FinishExecution(ctx, finish(admit("warm-up"))))

	b := admit("k1")
	trips.reset()
	require.NoError(t, s.FinishExecution(ctx, finish(b)))
	assert.EqualValues(t, 1, trips.n.Load(), "one round trip")
	assert.EqualValues(t, 4, trips.stmts.Load(), "the finish, its events, the alert's lock and its sum")

	plain := admit("k2")
	trips.reset()
	require.NoError(t, s.FinishExecution(ctx, testFinish(plain, storage.ExecutionCompleted, t0.Add(time.Second))))
	assert.EqualValues(t, 1, trips.n.Load())
	assert.EqualValues(t, 1, trips.stmts.Load(), "no events: the finish alone")
}

// Whatever bytes a caller's input carries into a payload (an escaped NUL,
// bytes that are not UTF-8 inside a string) are kept as they were, and
// what the database's text cannot hold (a NUL in an id, in an error) is
// refused or made text before anything is sent: never a failure of the
// statement.
func TestOutboxOddBytes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	payload := []byte("{\"data\":{\"input\":\"a\\u0000b \xff\xfe\"}}")
	ok, err := s.AddEvent(ctx, storage.NewEvent{ID: "odd", Type: "approval_request.created", Payload: payload, CreatedAt: t0})
	require.NoError(t, err)
	require.True(t, ok)
	got := allEvents(t, s)
	require.Len(t, got, 1)
	assert.Equal(t, payload, got[0].Payload, "kept byte for byte")

	_, err = s.AddEvent(ctx, storage.NewEvent{ID: "nul\x00id", Type: "t", Payload: []byte(`{}`), CreatedAt: t0})
	require.Error(t, err)
	_, err = s.AddEvent(ctx, storage.NewEvent{ID: "bad\xffid", Type: "t", Payload: []byte(`{}`), CreatedAt: t0})
	require.Error(t, err)
	assert.Len(t, allEvents(t, s), 1)

	claimed, err := s.ClaimEvents(ctx, storage.ClaimEvents{Now: t0, Lease: time.Minute, Limit: 1})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	long := "receiver said \x00\xff " + strings.Repeat("é", 400)
	require.NoError(t, s.EventAttempted(ctx, storage.EventAttempt{ID: "odd", LeaseToken: claimed[0].LeaseToken, Now: t0,
		Status: storage.EventPending, RetryAt: t0.Add(time.Minute), LastError: long}))
	got = allEvents(t, s)
	assert.True(t, strings.HasPrefix(got[0].LastError, "receiver said \uFFFD\uFFFD "), got[0].LastError)
	assert.LessOrEqual(t, len(got[0].LastError), storage.MaxEventErrorLength)

	// A finish whose alert cannot take a used amount fails before it is
	// sent: the call is still running, and can be finished.
	b := admitOn(t, s, "alice", "k")
	f := testFinish(b, storage.ExecutionCompleted, t0)
	bad := teamAlert("1")
	bad.Event.Payload = []byte(`{"data":"not an object"}`)
	f.Alerts = []storage.BudgetAlert{bad}
	err = s.FinishExecution(ctx, f)
	require.Error(t, err)
	assert.False(t, errors.Is(err, storage.ErrLeaseLost))
	f.Alerts = nil
	require.NoError(t, s.FinishExecution(ctx, f))
}

// Two charges that reach a threshold only together, made at the same
// moment on two instances, write the alert: their events held up by a
// third session (an uncommitted insert of the same ids) until both
// charges are made and neither committed, each then weighs the alert,
// and the one that weighs second waits for the first to commit and sees
// its charge.
func TestOutboxAlertSeesAChargeMadeAtTheSameTime(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	stores := []*postgres.Store{openInstance(t, schema), openInstance(t, schema)}
	begins := make([]storage.Begin, 2)
	for i, s := range stores {
		q := testQuote(fmt.Sprintf("p%d", i), "tool-a", "0.10", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		begins[i] = budgetCall(q, "k", t0, []string{"team"})
		_, err := s.BeginExecution(ctx, begins[i])
		require.NoError(t, err)
	}

	holder, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	var pid int32
	require.NoError(t, holder.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	for i := range begins {
		_, err := holder.Exec(ctx, fmtSchema(`INSERT INTO {schema}.events (id, type, payload, created_at, status,
			next_attempt_at, retrying_since) VALUES ($1, 't', '{}', $2, 'pending', $2, $2)`, schema), fmt.Sprintf("held-%d", i), t0)
		require.NoError(t, err)
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			f := testFinish(begins[i], storage.ExecutionCompleted, t0.Add(time.Second))
			f.Events = []storage.NewEvent{outboxEvent("t", fmt.Sprintf("held-%d", i))}
			f.Alerts = []storage.BudgetAlert{teamAlert("0.2")}
			errs[i] = s.FinishExecution(ctx, f)
		})
	}
	require.Eventually(t, func() bool {
		var waiting int
		err := sharedPool(t).QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&waiting)
		return err == nil && waiting == 2
	}, 10*time.Second, 5*time.Millisecond, "both charges made, and waiting")
	require.NoError(t, holder.Rollback(ctx))
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])

	var alert *storage.Event
	for _, e := range allEvents(t, stores[0]) {
		if e.ID == teamAlert("0.2").Event.ID {
			alert = &e
		}
	}
	require.NotNil(t, alert, "0.10 + 0.10 reach 0.2")
	assert.Equal(t, "0.2000", usedUSD(t, alert.Payload))
}

// Sealed finishes and resolutions write their events too, on each way a
// receipt is written: on the chain head the Store remembers, and under
// the chain's lock in a transaction of its own when another instance
// moved the chain meanwhile.
func TestOutboxSealedCausesWriteTheirEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	a, b := openInstance(t, schema), openInstance(t, schema)
	var sealed atomic.Int64
	sealedIn := func(s *postgres.Store, key string, status storage.ExecutionStatus) (storage.Begin, storage.Finish) {
		q := testQuote("alice", "tool-a", "0.60", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		bg := budgetCall(q, key, t0, []string{"team"})
		_, err := s.BeginExecution(ctx, bg)
		require.NoError(t, err)
		sealed.Store(0)
		f := sealedTestFinish(bg, status, t0.Add(time.Second), &sealed)
		f.Events = []storage.NewEvent{outboxEvent("execution.finished", "ev:"+key)}
		f.Alerts = []storage.BudgetAlert{teamAlert("0.5"), teamAlert("1"), teamAlert("1.5")}
		return bg, f
	}
	_, f1 := sealedIn(a, "k1", storage.ExecutionCompleted)
	require.NoError(t, a.FinishExecution(ctx, f1)) // a remembers the head
	_, f2 := sealedIn(b, "k2", storage.ExecutionCompleted)
	require.NoError(t, b.FinishExecution(ctx, f2)) // the chain moves on b
	b3, f3 := sealedIn(a, "k3", storage.ExecutionAmbiguous)
	require.NoError(t, a.FinishExecution(ctx, f3))
	assert.EqualValues(t, 2, sealed.Load(), "a's head was behind: sealed again under the chain's lock")

	ids := map[string]string{}
	for _, e := range allEvents(t, a) {
		ids[e.ID] = ""
		if e.Type == "budget.threshold" {
			ids[e.ID] = usedUSD(t, e.Payload)
		}
	}
	assert.Equal(t, map[string]string{"ev:k1": "", "ev:k2": "", "ev:k3": "",
		teamAlert("0.5").Event.ID: "0.6000", teamAlert("1").Event.ID: "1.2000"}, ids)

	_, err := b.ResolveExecution(ctx, storage.Resolve{ExecutionID: b3.ExecutionID, Outcome: storage.ExecutionCompleted,
		ResolvedBy: "pat", Response: []byte(`{"status":"completed"}`), Now: t0.Add(time.Minute),
		Seal:   storagetest.TestSeal(b3.ExecutionID, `{"status":"completed"}`, nil),
		Alerts: []storage.BudgetAlert{teamAlert("1.5")}})
	require.NoError(t, err)
	var resolved *storage.Event
	for _, e := range allEvents(t, b) {
		if e.ID == teamAlert("1.5").Event.ID {
			resolved = &e
		}
	}
	require.NotNil(t, resolved, "the resolution's charge reaches 1.5")
	assert.Equal(t, "1.8000", usedUSD(t, resolved.Payload))
	chain, err := a.ListReceipts(ctx, "alice", 0, 10)
	require.NoError(t, err)
	assert.Len(t, chain, 4, "three finishes and a resolution, each with its receipt")
}
