package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
)

// sizes records the batch sizes a Store reports, by operation.
type sizes struct {
	mu sync.Mutex
	by map[string][]int
}

func observeSizes(s *postgres.Store) *sizes {
	z := &sizes{by: map[string][]int{}}
	s.ObserveBatches(func(op string, n int) {
		z.mu.Lock()
		z.by[op] = append(z.by[op], n)
		z.mu.Unlock()
	})
	return z
}

func (z *sizes) of(op string) []int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return slices.Clone(z.by[op])
}

// holdAdmissions fills every room s has for admission batches with
// admissions that wait for principals' locks held by another session, so
// that the calls made next wait and go together as one batch once release
// is called. release waits for the held admissions to end. The Store's
// batches then wait for locks as long as it takes: the held admissions
// hold their rooms until release.
func holdAdmissions(t *testing.T, s *postgres.Store, schema string) (release func()) {
	t.Helper()
	return holdAdmissionsFor(t, s, schema, time.Minute)
}

// holdAdmissionsFor is holdAdmissions with the Store's batches waiting
// for locks as long as wait.
func holdAdmissionsFor(t *testing.T, s *postgres.Store, schema string, wait time.Duration) (release func()) {
	t.Helper()
	ctx := t.Context()
	s.SetLockWait(wait)
	tx, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range postgres.AdmissionBatchesInFlight() {
		principal := fmt.Sprintf("holder-%d", i)
		// The lock row exists, then the other session holds it.
		admitOn(t, s, principal, "first")
		_, err := tx.Exec(ctx, fmtSchema(`SELECT FROM {schema}.principal_locks WHERE principal = $1 FOR UPDATE`, schema), principal)
		require.NoError(t, err)
		q := testQuote(principal, "tool-a", "0.01", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.BeginExecution(ctx, testBegin(q, "held", t0))
			assert.NoError(t, err)
		}()
		if wait >= time.Minute {
			require.Eventually(t, func() bool { n, _ := s.PendingAdmissions(); return n == i+1 }, 5*time.Second, time.Millisecond)
		}
	}
	return func() {
		require.NoError(t, tx.Rollback(ctx))
		wg.Wait()
	}
}

// holdFinishes does for finishes what holdAdmissions does for admissions:
// the held finishes wait for their executions' rows, locked by another
// session.
func holdFinishes(t *testing.T, s *postgres.Store, schema string) (release func()) {
	t.Helper()
	ctx := t.Context()
	s.SetLockWait(time.Minute)
	tx, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range postgres.FinishBatchesInFlight() {
		b := admitOn(t, s, fmt.Sprintf("finish-holder-%d", i), "held")
		_, err := tx.Exec(ctx, fmtSchema(`SELECT FROM {schema}.executions WHERE id = $1 FOR UPDATE`, schema), b.ExecutionID)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, t0)))
		}()
		require.Eventually(t, func() bool { n, _ := s.PendingFinishes(); return n == i+1 }, 5*time.Second, time.Millisecond)
	}
	return func() {
		require.NoError(t, tx.Rollback(ctx))
		wg.Wait()
	}
}

// inOneBatch runs each of calls on its own goroutine, one after the other
// as each joins the queue (queued reports how many wait), so that they
// wait in that order for the held batches, then releases those, and waits
// for every call.
func inOneBatch(t *testing.T, queued func() int, release func(), calls ...func()) {
	t.Helper()
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func() { defer wg.Done(); call() }()
		require.Eventually(t, func() bool { return queued() == i+1 }, 5*time.Second, time.Millisecond)
	}
	release()
	wg.Wait()
}

func queuedAdmissions(s *postgres.Store) func() int {
	return func() int { _, n := s.PendingAdmissions(); return n }
}

func queuedFinishes(s *postgres.Store) func() int {
	return func() int { _, n := s.PendingFinishes(); return n }
}

// Two calls under one key that arrive together are never admitted
// together: one goes in a later batch and finds the other's execution
// running (the key in use), while a call of another principal rides in
// the same batch as one of them.
func TestBatchedAdmissionsOneKeyRunsOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	z := observeSizes(s)

	q := testQuote("alice", "tool-a", "0.10", t0)
	require.NoError(t, s.CreateQuote(ctx, q))
	bobs := testQuote("bob", "tool-a", "0.10", t0)
	require.NoError(t, s.CreateQuote(ctx, bobs))
	first, retry := testBegin(q, "k", t0), testBegin(q, "k", t0)
	var errFirst, errRetry, errBob error
	inOneBatch(t, queuedAdmissions(s), holdAdmissions(t, s, schema),
		func() { _, errFirst = s.BeginExecution(ctx, first) },
		func() { _, errRetry = s.BeginExecution(ctx, retry) },
		func() { _, errBob = s.BeginExecution(ctx, testBegin(bobs, "k", t0)) },
	)
	require.NoError(t, errBob)
	// One of the two ran; the other found the key's call running, and
	// waits for it (its caller retries).
	winner := first
	if errFirst != nil {
		winner = retry
		assert.ErrorIs(t, errFirst, storage.ErrIdempotencyConflict)
		assert.NoError(t, errRetry)
	} else {
		assert.ErrorIs(t, errRetry, storage.ErrIdempotencyConflict, "the key's call is running: the retry waits for it")
	}
	assert.Contains(t, z.of("admit"), 2, "one of alice's calls and bob's went in one batch")

	// One execution for the key, the one that ran.
	var n int
	require.NoError(t, sharedPool(t).QueryRow(ctx, fmtSchema(
		`SELECT count(*) FROM {schema}.executions WHERE principal = 'alice' AND idempotency_key = 'k'`, schema)).Scan(&n))
	assert.Equal(t, 1, n)
	_, err := s.GetExecution(ctx, winner.ExecutionID)
	require.NoError(t, err, "the execution is the key's")
}

// A batch's calls are decided as if admitted one by one in their order: a
// call over its principal's limit is refused beside calls within theirs,
// and a later call is measured without the refused one.
func TestBatchedAdmissionsLimitsAsOneByOne(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	z := observeSizes(s)
	limit := storage.Limit{Measure: storage.MeasureSpend, Since: t0.Add(-24 * time.Hour), Max: dec("0.30")}

	amounts := []string{"0.11", "0.11", "0.11", "0.05"} // carol's, in order
	begins := make([]storage.Begin, len(amounts))
	for i, a := range amounts {
		q := testQuote("carol", "tool-a", a, t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		begins[i] = testBegin(q, fmt.Sprintf("c%d", i), t0, limit)
	}
	daves := testQuote("dave", "tool-a", "0.25", t0)
	require.NoError(t, s.CreateQuote(ctx, daves))

	errs := make([]error, len(begins)+1)
	calls := make([]func(), 0, len(errs))
	for i := range begins {
		calls = append(calls, func() { _, errs[i] = s.BeginExecution(ctx, begins[i]) })
	}
	calls = append(calls, func() { _, errs[len(begins)] = s.BeginExecution(ctx, testBegin(daves, "d", t0, limit)) })
	inOneBatch(t, queuedAdmissions(s), holdAdmissions(t, s, schema), calls...)

	assert.NoError(t, errs[0])
	assert.NoError(t, errs[1])
	var le *storage.LimitError
	require.ErrorAs(t, errs[2], &le, "0.33 would pass 0.30")
	assert.Equal(t, "0.22", le.Failures[0].Used.StringFixed(2), "measured with the two calls before it")
	assert.NoError(t, errs[3], "0.27: the refused call does not count")
	assert.NoError(t, errs[4], "dave's limit is his own")
	assert.Contains(t, z.of("admit"), 5, "the five calls went in one batch")
	assertUsed(t, s, "carol", "0.27", "3")
	// The refused call wrote nothing: its quote is still open.
	q, err := s.GetQuote(ctx, begins[2].QuoteID)
	require.NoError(t, err)
	assert.Equal(t, storage.QuoteOpen, q.State)
}

// Finishes of one principal that go together store their receipts in
// their order, each sealed on the one before, with no gap.
func TestBatchedFinishesSealOnePrincipalInOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	z := observeSizes(s)

	// Erin's chain has a receipt already, finished alone.
	b0 := admitOn(t, s, "erin", "e0")
	require.NoError(t, s.FinishExecution(ctx, sealedTestFinish(b0, storage.ExecutionCompleted, t0, nil)))
	begins := make([]storage.Begin, 5)
	for i := range begins {
		begins[i] = admitOn(t, s, "erin", fmt.Sprintf("e%d", i+1))
	}
	var sealed atomic.Int64
	errs := make([]error, len(begins))
	calls := make([]func(), len(begins))
	for i := range begins {
		calls[i] = func() {
			errs[i] = s.FinishExecution(ctx, sealedTestFinish(begins[i], storage.ExecutionCompleted, t0, &sealed))
		}
	}
	inOneBatch(t, queuedFinishes(s), holdFinishes(t, s, schema), calls...)
	for i, err := range errs {
		require.NoError(t, err, "finish %d", i)
	}
	assert.Contains(t, z.of("finish"), 5, "the five finishes went in one batch")
	assert.Equal(t, int64(5), sealed.Load(), "each sealed once: the batch knew the chain's head")

	receipts, err := s.ListReceipts(ctx, "erin", 0, 100)
	require.NoError(t, err)
	require.Len(t, receipts, 6)
	ids := map[uuid.UUID]bool{}
	for _, b := range begins {
		ids[b.ExecutionID] = true
	}
	prev := ""
	for i, r := range receipts {
		assert.Equal(t, int64(i+1), r.Seq)
		var body struct {
			Execution uuid.UUID `json:"execution"`
			Prev      string    `json:"prev"`
			Seq       int64     `json:"seq"`
		}
		require.NoError(t, json.Unmarshal(r.Signed, &body))
		assert.Equal(t, prev, body.Prev, "receipt %d is sealed on the one before", r.Seq)
		assert.Equal(t, r.Seq, body.Seq)
		prev = r.Hash
		if i > 0 {
			assert.Contains(t, ids, r.ExecutionID)
			delete(ids, r.ExecutionID)
		}
	}
	assert.Empty(t, ids, "every finish has its receipt")
}

// Two instances batching admissions at once against one budget never take
// it over its limit, and fill it exactly: every call admitted while there
// was room, none after.
func TestTwoInstancesBatchingAgainstOneBudget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	stores := []*postgres.Store{openInstance(t, schema), openInstance(t, schema)}
	zs := []*sizes{observeSizes(stores[0]), observeSizes(stores[1])}
	day := t0.Format(time.DateOnly)
	limit := budgetDaily("org", day, "2.00") // 20 calls of 0.10

	const perInstance, clients = 40, 16
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i, s := range stores {
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := c; k < perInstance; k += clients {
					principal := fmt.Sprintf("p%d-%d", i, k%7)
					q := testQuote(principal, "tool-a", "0.10", t0)
					if !assert.NoError(t, s.CreateQuote(ctx, q)) {
						return
					}
					_, err := s.BeginExecution(ctx, budgetCall(q, fmt.Sprintf("k%d-%d", i, k), t0, []string{"org"}, limit))
					var le *storage.LimitError
					switch {
					case err == nil:
						admitted.Add(1)
					case errors.As(err, &le):
						refused.Add(1)
					default:
						t.Errorf("admission: %v", err)
					}
				}
			}()
		}
	}
	wg.Wait()
	assert.Equal(t, int64(20), admitted.Load(), "the budget holds 20 calls")
	assert.Equal(t, int64(2*perInstance-20), refused.Load())
	assert.Equal(t, "2", budgetUsed(t, stores[0], limit).String())
	assertBudgetRollupsExact(t, schema)
	batched := 0
	for _, z := range zs {
		for _, n := range z.of("admit") {
			if n > 1 {
				batched++
			}
		}
	}
	t.Logf("batches of more than one admission: %d", batched)
}

// A batch whose statement fails as a whole (here a call whose amount the
// database cannot hold) is sent again call by call: the call at fault
// fails alone, having written nothing, and the others are admitted.
func TestBatchFailingWholeIsRetriedCallByCall(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	z := observeSizes(s)

	begins := make([]storage.Begin, 3)
	for i := range begins {
		q := testQuote("frank", "tool-a", "0.10", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		begins[i] = testBegin(q, fmt.Sprintf("f%d", i), t0)
	}
	begins[1].AmountUSD = dec("1e17") // NUMERIC(20,4) holds less
	errs := make([]error, len(begins))
	calls := make([]func(), len(begins))
	for i := range begins {
		calls[i] = func() { _, errs[i] = s.BeginExecution(ctx, begins[i]) }
	}
	retries := s.BatchRetries()
	inOneBatch(t, queuedAdmissions(s), holdAdmissions(t, s, schema), calls...)

	assert.Contains(t, z.of("admit"), 3)
	assert.Equal(t, retries+1, s.BatchRetries(), "the batch failed as a whole once")
	assert.NoError(t, errs[0])
	assert.Error(t, errs[1])
	assert.NoError(t, errs[2])
	_, err := s.GetExecution(ctx, begins[1].ExecutionID)
	assert.ErrorIs(t, err, storage.ErrNotFound)
	q, err := s.GetQuote(ctx, begins[1].QuoteID)
	require.NoError(t, err)
	assert.Equal(t, storage.QuoteOpen, q.State, "the call at fault wrote nothing")
	assertUsed(t, s, "frank", "0.2", "2")
}

// A finish batch sealed on a chain head another instance has moved on
// from commits its other finishes, and only that principal's go again
// alone: every finish is recorded, and the chain stays gapless.
func TestFinishBatchOnAMovedChainRetriesOnlyThatChain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	other := openInstance(t, schema)

	// s learns gina's head; then another instance finishes one of her
	// calls, so the seq s would seal next is taken.
	b0 := admitOn(t, s, "gina", "g0")
	require.NoError(t, s.FinishExecution(ctx, sealedTestFinish(b0, storage.ExecutionCompleted, t0, nil)))
	bo := admitOn(t, other, "gina", "g-other")
	require.NoError(t, other.FinishExecution(ctx, sealedTestFinish(bo, storage.ExecutionCompleted, t0, nil)))

	begins := []storage.Begin{admitOn(t, s, "gina", "g1"), admitOn(t, s, "henry", "h1"), admitOn(t, s, "gina", "g2")}
	var sealed atomic.Int64
	errs := make([]error, len(begins))
	calls := make([]func(), len(begins))
	for i := range begins {
		calls[i] = func() {
			errs[i] = s.FinishExecution(ctx, sealedTestFinish(begins[i], storage.ExecutionCompleted, t0, &sealed))
		}
	}
	retries := s.BatchRetries()
	inOneBatch(t, queuedFinishes(s), holdFinishes(t, s, schema), calls...)
	for i, err := range errs {
		require.NoError(t, err, "finish %d", i)
	}
	assert.Equal(t, retries, s.BatchRetries(), "the batch committed henry's finish")
	assert.Equal(t, int64(5), sealed.Load(), "henry's sealed once; gina's twice each, in the batch and under her chain's lock")
	for p, n := range map[string]int{"gina": 4, "henry": 1} {
		receipts, err := s.ListReceipts(ctx, p, 0, 100)
		require.NoError(t, err)
		require.Len(t, receipts, n)
		for i, r := range receipts {
			assert.Equal(t, int64(i+1), r.Seq, "%s's chain has no gap", p)
		}
	}
	for _, b := range begins {
		e, err := s.GetExecution(ctx, b.ExecutionID)
		require.NoError(t, err)
		assert.Equal(t, storage.ExecutionCompleted, e.Status)
	}
}

// A finish batch that waits too long for a lock fails as a whole, and its
// finishes go again one by one: the one whose row is held waits for it,
// alone, and the others are recorded meanwhile.
func TestFinishBatchWaitingTooLongGoesOneByOne(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	ivan, judy := admitOn(t, s, "ivan", "i1"), admitOn(t, s, "judy", "j1")
	release := holdFinishes(t, s, schema)

	// Another session holds judy's execution row past the batch's wait.
	tx, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, fmtSchema(`SELECT FROM {schema}.executions WHERE id = $1 FOR UPDATE`, schema), judy.ExecutionID)
	require.NoError(t, err)

	ivanDone, judyDone := make(chan error, 1), make(chan error, 1)
	go func() { ivanDone <- s.FinishExecution(ctx, testFinish(ivan, storage.ExecutionCompleted, t0)) }()
	require.Eventually(t, func() bool { return queuedFinishes(s)() == 1 }, 5*time.Second, time.Millisecond)
	go func() { judyDone <- s.FinishExecution(ctx, testFinish(judy, storage.ExecutionCompleted, t0)) }()
	require.Eventually(t, func() bool { return queuedFinishes(s)() == 2 }, 5*time.Second, time.Millisecond)
	retries := s.BatchRetries()
	s.SetLockWait(100 * time.Millisecond)
	release()

	select {
	case err := <-ivanDone:
		require.NoError(t, err, "ivan's finish is recorded while judy's row is held")
	case <-time.After(10 * time.Second):
		t.Fatal("ivan's finish waited for judy's row")
	}
	assert.Equal(t, retries+1, s.BatchRetries(), "the batch gave up waiting once")
	select {
	case err := <-judyDone:
		t.Fatalf("judy's finish ended while her row was held: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, tx.Rollback(ctx))
	require.NoError(t, <-judyDone)
	e, err := s.GetExecution(ctx, judy.ExecutionID)
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionCompleted, e.Status)
}

// An admission of one principal does not wait for the locks of others
// that its Store's batches in flight are waiting for: they give up after a
// moment and wait on their own.
func TestAdmissionNotHeldUpByOtherPrincipalsLocks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	q := testQuote("zed", "tool-a", "0.10", t0)
	require.NoError(t, s.CreateQuote(ctx, q))
	release := holdAdmissionsFor(t, s, schema, 100*time.Millisecond)
	defer release()
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := s.BeginExecution(short, testBegin(q, "z", t0))
	assert.NoError(t, err, "zed's admission waited for locks of principals it has nothing to do with")
}

// An admission batch and a finish batch of one Store update the same
// principals' rollup rows in one order, so they do not deadlock.
func TestAdmissionAndFinishBatchesDoNotDeadlock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	pool := sharedPool(t)
	e1, e2 := admitOn(t, s, "pa", "e1"), admitOn(t, s, "pb", "e2")
	qb := testQuote("pb", "tool-a", "0.10", t0)
	require.NoError(t, s.CreateQuote(ctx, qb))
	qa := testQuote("pa", "tool-a", "0.10", t0)
	require.NoError(t, s.CreateQuote(ctx, qa))

	// A third session holds pb's day row: both batches come to wait.
	x, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = x.Rollback(ctx) }()
	_, err = x.Exec(ctx, fmtSchema(`SELECT FROM {schema}.spend_daily WHERE principal = 'pb' FOR UPDATE`, schema))
	require.NoError(t, err)
	waiting := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`, schema).Scan(&n))
		return n
	}
	retries := s.BatchRetries()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	releaseA := holdAdmissions(t, s, schema) // pb's call arrives first, then pa's
	for i, b := range []storage.Begin{testBegin(qb, "nb", t0), testBegin(qa, "na", t0)} {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = s.BeginExecution(ctx, b) }()
		require.Eventually(t, func() bool { return queuedAdmissions(s)() == i+1 }, 5*time.Second, time.Millisecond)
	}
	releaseA()
	require.Eventually(t, func() bool { return waiting() >= 1 }, 5*time.Second, time.Millisecond)
	releaseF := holdFinishes(t, s, schema) // failed, so both release their amounts
	for i, b := range []storage.Begin{e1, e2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[2+i] = s.FinishExecution(ctx, testFinish(b, storage.ExecutionFailed, t0))
		}()
		require.Eventually(t, func() bool { return queuedFinishes(s)() == i+1 }, 5*time.Second, time.Millisecond)
	}
	releaseF()
	require.Eventually(t, func() bool { return waiting() >= 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, x.Rollback(ctx))
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "call %d", i)
	}
	// The batches wait a minute for a lock here (holdAdmissions): a cycle
	// between them would have been broken by the server's deadlock
	// detection, failing one of them.
	assert.Equal(t, retries, s.BatchRetries(), "neither batch failed")
}
