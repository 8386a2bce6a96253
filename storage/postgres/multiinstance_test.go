package postgres_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
)

// These tests stand in for two gateway processes: two Stores, each on a pool
// of its own, over one schema. Nothing in Go is shared between them, so
// whatever keeps them correct is the database.

func twoInstances(t *testing.T) []*postgres.Store {
	t.Helper()
	schema := newSchema(t)
	return []*postgres.Store{openInstance(t, schema), openInstance(t, schema)}
}

// goAll runs n calls of f at once, split across the instances, and waits.
func goAll(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

func TestMultiInstanceOneKeyRunsOnce(t *testing.T) {
	t.Parallel()
	stores := twoInstances(t)
	ctx := t.Context()
	q := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, stores[0].CreateQuote(ctx, q))

	const n = 100
	var (
		won       atomic.Int32
		winner    atomic.Value
		conflicts atomic.Int32
		other     = make([]error, n)
	)
	goAll(n, func(i int) {
		b := testBegin(q, "the-key", t0) // own execution id and lease token
		_, err := stores[i%2].BeginExecution(ctx, b)
		switch {
		case err == nil:
			won.Add(1)
			winner.Store(b.ExecutionID)
		case errors.Is(err, storage.ErrIdempotencyConflict):
			conflicts.Add(1)
		default:
			other[i] = err
		}
	})
	for i, err := range other {
		require.NoError(t, err, "goroutine %d", i)
	}
	require.EqualValues(t, 1, won.Load(), "exactly one run admitted")
	assert.EqualValues(t, n-1, conflicts.Load())

	rec, err := stores[1].GetIdempotency(ctx, "alice", "the-key")
	require.NoError(t, err)
	assert.Equal(t, winner.Load(), rec.ExecutionID)
	assertUsed(t, stores[0], "alice", "0.11", "1")
}

func TestMultiInstanceDailyLimitHolds(t *testing.T) {
	t.Parallel()
	stores := twoInstances(t)
	ctx := t.Context()
	day := t0.Truncate(24 * time.Hour)
	daily := storage.Limit{Measure: storage.MeasureSpend, Since: day, Max: dec("5.50")}

	const n = 200
	quotes := make([]storage.Quote, n)
	for i := range quotes {
		quotes[i] = testQuote("alice", "tool-a", "0.11", t0)
		require.NoError(t, stores[i%2].CreateQuote(ctx, quotes[i]))
	}
	var (
		admitted atomic.Int32
		errs     = make([]error, n)
	)
	goAll(n, func(i int) {
		b := testBegin(quotes[i], fmt.Sprintf("key-%d", i), t0, daily)
		if _, err := stores[i%2].BeginExecution(ctx, b); err != nil {
			errs[i] = err
			return
		}
		admitted.Add(1)
	})
	assert.EqualValues(t, 50, admitted.Load(), "5.50 / 0.11 calls, no more")
	for i, err := range errs {
		if err == nil {
			continue
		}
		var le *storage.LimitError
		if !assert.ErrorAs(t, err, &le, "goroutine %d", i) {
			continue
		}
		require.Len(t, le.Failures, 1)
		assert.Truef(t, dec("5.50").Equal(le.Failures[0].Used), "refused at %s used", le.Failures[0].Used)
	}
	assertUsed(t, stores[1], "alice", "5.50", "50")
}

func TestMultiInstanceTakeoverAfterLeaseExpiry(t *testing.T) {
	t.Parallel()
	stores := twoInstances(t)
	ctx := t.Context()
	q := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, stores[0].CreateQuote(ctx, q))
	daily := storage.Limit{Measure: storage.MeasureSpend, Since: t0.Truncate(24 * time.Hour), Max: dec("0.11")}

	// Instance 0 admits the call, then its process "dies".
	first := testBegin(q, "the-key", t0, daily)
	_, err := stores[0].BeginExecution(ctx, first)
	require.NoError(t, err)

	// Retries race on both instances after the lease ended. The daily limit
	// leaves no room for a second reservation, so a takeover that measured
	// or reserved again would fail.
	later := t0.Add(2 * time.Minute)
	const n = 20
	var (
		tookOver atomic.Int32
		winner   atomic.Value
		errs     = make([]error, n)
	)
	goAll(n, func(i int) {
		b := testBegin(q, "the-key", later, daily)
		res, err := stores[i%2].BeginExecution(ctx, b)
		if err != nil {
			errs[i] = err
			return
		}
		assert.True(t, res.TookOver)
		assert.Equal(t, first.ExecutionID, res.Execution.ID, "the original execution is kept")
		tookOver.Add(1)
		b.ExecutionID = res.Execution.ID // what the gateway finishes
		winner.Store(b)
	})
	require.EqualValues(t, 1, tookOver.Load(), "exactly one retry takes over")
	for _, err := range errs {
		if err != nil {
			assert.ErrorIs(t, err, storage.ErrIdempotencyConflict)
		}
	}
	assertUsed(t, stores[1], "alice", "0.11", "1")
	retry := winner.Load().(storage.Begin)

	// The first run comes back to life: its result must be discarded.
	err = stores[0].FinishExecution(ctx, testFinish(first, storage.ExecutionCompleted, later))
	assert.ErrorIs(t, err, storage.ErrLeaseLost)

	require.NoError(t, stores[1].FinishExecution(ctx, testFinish(retry, storage.ExecutionCompleted, later.Add(time.Second))))
	exec, err := stores[0].GetExecution(ctx, first.ExecutionID)
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionCompleted, exec.Status)
	assert.True(t, exec.Charged)
	rec, err := stores[0].GetIdempotency(ctx, "alice", "the-key")
	require.NoError(t, err)
	assert.True(t, rec.Finished)
	assert.Equal(t, retry.LeaseToken, rec.LeaseToken)
	assert.JSONEq(t, `{"status":"completed"}`, string(rec.Response))
	assertUsed(t, stores[1], "alice", "0.11", "1")

	err = stores[0].FinishExecution(ctx, testFinish(first, storage.ExecutionFailed, later))
	assert.ErrorIs(t, err, storage.ErrLeaseLost, "still lost after the finish")
	err = stores[0].FinishExecution(ctx, testFinish(testBegin(q, "ghost", t0), storage.ExecutionFailed, later))
	assert.ErrorIs(t, err, storage.ErrNotFound)
}

// TestMultiInstanceOpenQuotesCapped makes quotes of one principal at once
// on two instances, in the gateway's batch (ReadBatch) and alone: exactly
// the cap are stored, and every other is refused by it.
func TestMultiInstanceOpenQuotesCapped(t *testing.T) {
	t.Parallel()
	stores := twoInstances(t)
	ctx := t.Context()
	const n, max = 60, 7
	var created, refused atomic.Int32
	other := make([]error, n)
	goAll(n, func(i int) {
		q := testQuote("alice", "tool-a", "0.11", t0)
		var err error
		if i%4 < 2 {
			err = stores[i%2].CreateQuoteCapped(ctx, q, max)
		} else {
			_, err = stores[i%2].ReadBatch(ctx, storage.Reads{Principal: "alice", SpendControls: true, CreateQuote: &q, MaxOpenQuotes: max})
		}
		switch {
		case err == nil:
			created.Add(1)
		case errors.Is(err, storage.ErrTooManyOpenQuotes):
			refused.Add(1)
		default:
			other[i] = err
		}
	})
	for i, err := range other {
		require.NoError(t, err, "quote %d", i)
	}
	assert.EqualValues(t, max, created.Load())
	assert.EqualValues(t, n-max, refused.Load())
}
