package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/storage/storagetest"
)

// sealedTestFinish is testFinish with a storagetest.TestSeal.
func sealedTestFinish(b storage.Begin, status storage.ExecutionStatus, at time.Time, calls *atomic.Int64) storage.Finish {
	f := testFinish(b, status, at)
	f.Seal = storagetest.TestSeal(b.ExecutionID, string(f.Response), calls)
	return f
}

// admitOn quotes and admits a call of principal under key on s.
func admitOn(t *testing.T, s storage.Store, principal, key string) storage.Begin {
	t.Helper()
	q := testQuote(principal, "tool-a", "0.01", t0)
	require.NoError(t, s.CreateQuote(t.Context(), q))
	b := testBegin(q, key, t0)
	_, err := s.BeginExecution(t.Context(), b)
	require.NoError(t, err)
	return b
}

// TestReceiptsTwoInstancesOnePrincipal finishes 200 calls of one principal
// at once, half on each of two Stores over one schema, as two gateway
// processes would: the chain is 1..200 with no gap, each receipt sealed on
// the one before, and each execution's stored response is the one sealed
// with its own receipt.
func TestReceiptsTwoInstancesOnePrincipal(t *testing.T) {
	t.Parallel()
	stores := twoInstances(t)
	ctx := t.Context()
	const n = 200
	begins := make([]storage.Begin, n)
	for i := range begins {
		begins[i] = admitOn(t, stores[i%2], "alice", "key-"+strconv.Itoa(i))
	}
	var (
		seals = make([]atomic.Int64, n)
		errs  = make([]error, n)
	)
	status := func(i int) storage.ExecutionStatus {
		if i%5 == 0 { // some releases too, which the rollup triggers follow
			return storage.ExecutionFailed
		}
		return storage.ExecutionCompleted
	}
	goAll(n, func(i int) {
		errs[i] = stores[i%2].FinishExecution(ctx, sealedTestFinish(begins[i], status(i), t0.Add(time.Second), &seals[i]))
	})
	retried := 0
	for i, err := range errs {
		require.NoError(t, err, "finish %d", i)
		// On the head remembered (or read), and when the other instance
		// had moved the chain, once more under the chain's lock, which no
		// other receipt writer can move: never a third time.
		require.LessOrEqual(t, seals[i].Load(), int64(2), "finish %d sealed more than twice", i)
		if seals[i].Load() == 2 {
			retried++
		}
	}
	t.Logf("%d of %d finishes retried under the chain's lock", retried, n)

	chain := storagetest.Chain(t, stores[0], "alice")
	require.Len(t, chain, n)
	seen := map[uuid.UUID]bool{}
	for _, r := range chain {
		require.False(t, seen[r.ExecutionID], "one receipt per execution")
		seen[r.ExecutionID] = true
		e, err := stores[1].GetExecution(ctx, r.ExecutionID)
		require.NoError(t, err)
		want := fmt.Sprintf(`{"status":%q,"receipt":%s}`, e.Status, r.Signed)
		require.Equal(t, want, string(e.Response), "the response is read with its own receipt")
		rec, err := stores[0].GetIdempotency(ctx, "alice", e.IdempotencyKey)
		require.NoError(t, err)
		require.Equal(t, want, string(rec.Response))
	}
	assertUsed(t, stores[0], "alice", "1.60", strconv.Itoa(n)) // 160 completed at 0.01
	usage, err := stores[1].Usage(ctx, "tool-a")
	require.NoError(t, err)
	assert.Equal(t, storage.Usage{Count: n * 4 / 5, UniqueUsers: 1}, usage)
}

// TestReceiptsRoundTrips pins what a receipt costs in round trips: none
// once the Store knows the principal's chain head; one read for the
// principal's first sealed finish in the process; and when another
// instance moved the chain, the statement that found it so and four more
// (BEGIN, the lock and the head, the statement, COMMIT). A finish that
// fails keeps no receipt and leaves the remembered head as it was.
func TestReceiptsRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, trips := benchPool(t)
	t.Cleanup(pool.Close)
	schema := newSchema(t)
	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	other := openInstance(t, schema)

	finish := func(b storage.Begin) int64 {
		t.Helper()
		trips.n.Store(0)
		require.NoError(t, s.FinishExecution(ctx, sealedTestFinish(b, storage.ExecutionCompleted, t0, nil)))
		return trips.n.Load()
	}
	// Prepare the statements on the pool's connections first: preparing
	// is a one-off, not what is pinned.
	for i := range 4 {
		finish(admitOn(t, s, "warm-"+strconv.Itoa(i), "k"))
	}

	assert.EqualValues(t, 2, finish(admitOn(t, s, "alice", "k1")), "first sealed finish: the head's read, the finish")
	assert.EqualValues(t, 1, finish(admitOn(t, s, "alice", "k2")), "the head remembered: the finish alone")

	// A lost lease: the finish and finishFailure's read, nothing kept.
	b := admitOn(t, s, "alice", "k3")
	lost := sealedTestFinish(b, storage.ExecutionCompleted, t0, nil)
	lost.LeaseToken = uuid.New()
	trips.n.Store(0)
	require.ErrorIs(t, s.FinishExecution(ctx, lost), storage.ErrLeaseLost)
	assert.EqualValues(t, 2, trips.n.Load())
	assert.Len(t, storagetest.Chain(t, s, "alice"), 2)
	assert.EqualValues(t, 1, finish(b), "the head is still the one remembered")

	// Another instance moves the chain.
	require.NoError(t, other.FinishExecution(ctx, sealedTestFinish(admitOn(t, other, "alice", "k4"), storage.ExecutionCompleted, t0, nil)))
	assert.EqualValues(t, 5, finish(admitOn(t, s, "alice", "k5")), "the chain moved: the finish, then under the lock")
	assert.EqualValues(t, 1, finish(admitOn(t, s, "alice", "k6")), "the head remembered again")

	// A resolution, rare, takes the plain way: the execution's principal,
	// then BEGIN, the lock and the head, the statement, COMMIT.
	amb := admitOn(t, s, "alice", "k7")
	require.NoError(t, s.FinishExecution(ctx, sealedTestFinish(amb, storage.ExecutionAmbiguous, t0, nil)))
	r := storage.Resolve{ExecutionID: amb.ExecutionID, Outcome: storage.ExecutionFailed, ResolvedBy: "approver", Now: t0,
		Response: []byte(`{"resolved":true}`)}
	r.Seal = storagetest.TestSeal(amb.ExecutionID, "resolved", nil)
	trips.n.Store(0)
	e, err := s.ResolveExecution(ctx, r)
	require.NoError(t, err)
	assert.EqualValues(t, 5, trips.n.Load(), "a sealed resolution")
	assert.EqualValues(t, 1, finish(admitOn(t, s, "alice", "k8")), "the head the resolution committed")
	chain := storagetest.Chain(t, s, "alice")
	assert.Len(t, chain, 9)
	assert.Equal(t, `{"resolved":true,"receipt":`+string(chain[7].Signed)+`}`, string(e.Response))
}

// TestReceiptsChainHeadLostByTheDatabase stands for a database that lost
// its last commits in a crash (synchronous_commit off) while the Store
// still remembers the receipts it committed: the next finish must seal on
// the chain the database has, not the one remembered, leaving no gap.
func TestReceiptsChainHeadLostByTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	for i := range 3 {
		require.NoError(t, s.FinishExecution(ctx, sealedTestFinish(admitOn(t, s, "alice", "k"+strconv.Itoa(i)), storage.ExecutionCompleted, t0, nil)))
	}
	_, err := sharedPool(t).Exec(ctx, `DELETE FROM `+pgx.Identifier{schema, "receipts"}.Sanitize()+` WHERE seq = 3`)
	require.NoError(t, err)

	b := admitOn(t, s, "alice", "k3")
	require.NoError(t, s.FinishExecution(ctx, sealedTestFinish(b, storage.ExecutionCompleted, t0, nil)))
	chain := storagetest.Chain(t, s, "alice")
	require.Len(t, chain, 3)
	assert.Equal(t, b.ExecutionID, chain[2].ExecutionID)
	e, err := s.GetExecution(ctx, b.ExecutionID)
	require.NoError(t, err)
	assert.Equal(t, `{"status":"completed","receipt":`+string(chain[2].Signed)+`}`, string(e.Response))
}

// TestReceiptsChainLockExcludesFinishes holds a principal's chain lock as a
// finish retrying under it does: another finish of the principal, on any
// Store, writes nothing meanwhile, then waits its turn and seals on
// whatever the holder committed.
func TestReceiptsChainLockExcludesFinishes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	require.NoError(t, s.FinishExecution(ctx, sealedTestFinish(admitOn(t, s, "alice", "k0"), storage.ExecutionCompleted, t0, nil)))
	b := admitOn(t, s, "alice", "k1")

	tx, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	class, key := s.ChainLock("alice")
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, $2::int4)`, class, key)
	require.NoError(t, err)

	done := make(chan error, 1)
	var seals atomic.Int64
	go func() { done <- s.FinishExecution(ctx, sealedTestFinish(b, storage.ExecutionCompleted, t0, &seals)) }()
	select {
	case err := <-done:
		t.Fatalf("the finish returned (%v) while the chain was locked", err)
	case <-time.After(300 * time.Millisecond):
	}
	e, err := s.GetExecution(ctx, b.ExecutionID)
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionRunning, e.Status, "nothing written while the chain is locked")
	assert.Len(t, storagetest.Chain(t, s, "alice"), 1)

	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-done)
	assert.EqualValues(t, 2, seals.Load(), "sealed on the remembered head, then on the one read under the lock")
	chain := storagetest.Chain(t, s, "alice")
	require.Len(t, chain, 2)
	assert.Equal(t, b.ExecutionID, chain[1].ExecutionID)
}

// TestReceiptsResolutionsAndFinishesAcrossInstances resolves ambiguous
// executions on one instance while the other finishes calls of the same
// principal: one chain, gapless, with a receipt for each finish and each
// resolution.
func TestReceiptsResolutionsAndFinishesAcrossInstances(t *testing.T) {
	t.Parallel()
	stores := twoInstances(t)
	ctx := t.Context()
	const n = 20
	ambiguous := make([]storage.Begin, n)
	for i := range ambiguous {
		ambiguous[i] = admitOn(t, stores[0], "alice", "amb-"+strconv.Itoa(i))
		require.NoError(t, stores[0].FinishExecution(ctx, sealedTestFinish(ambiguous[i], storage.ExecutionAmbiguous, t0, nil)))
	}
	running := make([]storage.Begin, n)
	for i := range running {
		running[i] = admitOn(t, stores[1], "alice", "run-"+strconv.Itoa(i))
	}
	errs := make([]error, 2*n)
	goAll(2*n, func(i int) {
		if i < n {
			r := storage.Resolve{
				ExecutionID: ambiguous[i].ExecutionID, Outcome: storage.ExecutionCompleted,
				ResolvedBy: "approver", Now: t0.Add(time.Hour), Response: []byte(`{"resolved":true}`),
			}
			r.Seal = storagetest.TestSeal(r.ExecutionID, "resolved", nil)
			_, errs[i] = stores[0].ResolveExecution(ctx, r)
			return
		}
		errs[i] = stores[1].FinishExecution(ctx, sealedTestFinish(running[i-n], storage.ExecutionCompleted, t0, nil))
	})
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
	}
	chain := storagetest.Chain(t, stores[1], "alice")
	require.Len(t, chain, 3*n)
	for _, b := range ambiguous {
		e, err := stores[1].GetExecution(ctx, b.ExecutionID)
		require.NoError(t, err)
		assert.Regexp(t, `^\{"resolved":true,"receipt":\{"execution":"`+b.ExecutionID.String()+`","prev":"sha256:[0-9a-f]+","seq":\d+\}\}$`, string(e.Response))
	}
}

// TestReceiptsOutlivePrune prunes every execution and record a chain's
// receipts name: the receipts stay, and the next finish, on a Store that
// never saw the chain, extends it.
func TestReceiptsOutlivePrune(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	for i := range 3 {
		require.NoError(t, s.FinishExecution(ctx, sealedTestFinish(admitOn(t, s, "alice", "k"+strconv.Itoa(i)), storage.ExecutionCompleted, t0, nil)))
	}
	later := t0.AddDate(1, 0, 0)
	res, err := s.Prune(ctx, storage.Prune{IdempotencyBefore: later, QuotesBefore: later, LedgerBefore: later, Limit: pruneAll})
	require.NoError(t, err)
	require.Equal(t, 3, res.Idempotency)
	require.Len(t, storagetest.Chain(t, s, "alice"), 3)

	fresh := openInstance(t, schema)
	b := admitOn(t, fresh, "alice", "k3")
	require.NoError(t, fresh.FinishExecution(ctx, sealedTestFinish(b, storage.ExecutionCompleted, t0, nil)))
	chain := storagetest.Chain(t, fresh, "alice")
	require.Len(t, chain, 4)
	assert.Equal(t, b.ExecutionID, chain[3].ExecutionID)
}
