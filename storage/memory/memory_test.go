package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return New() })
}

var t0 = time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)

// call runs one complete call through s at time at.
func call(t *testing.T, s *Store, principal, key string, at time.Time) storage.Begin {
	t.Helper()
	q := storage.Quote{
		ID: uuid.New(), Principal: principal, ToolID: "tool-a",
		TotalUSD: decimal.RequireFromString("0.11"), CreatedAt: at, ExpiresAt: at.Add(5 * time.Minute),
		State: storage.QuoteOpen,
	}
	require.NoError(t, s.CreateQuote(t.Context(), q))
	b := storage.Begin{
		Principal: principal, Key: key, Fingerprint: key, QuoteID: q.ID, ExecutionID: uuid.New(),
		ToolID: q.ToolID, AmountUSD: q.TotalUSD, LeaseToken: uuid.New(), LeaseUntil: at.Add(time.Minute), Now: at,
	}
	_, err := s.BeginExecution(t.Context(), b)
	require.NoError(t, err)
	require.NoError(t, s.FinishExecution(t.Context(), storage.Finish{
		Principal: principal, Key: key, ExecutionID: b.ExecutionID, LeaseToken: b.LeaseToken,
		Status: storage.ExecutionCompleted, Charged: true, Response: []byte("{}"), Now: at,
	}))
	return b
}

// sizes reports how many entries each internal structure holds.
func (s *Store) sizes() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, buckets := 0, 0
	for _, pl := range s.ledger {
		rows += pl.rows.len()
		for _, q := range pl.buckets {
			buckets += q.len()
		}
	}
	return map[string]int{
		"quotes":       len(s.quotes),
		"quoteQueue":   s.quoteQueue.len(),
		"records":      len(s.records),
		"recordQueue":  s.recordQueue.len(),
		"executions":   len(s.executions),
		"principals":   len(s.ledger),
		"ledgerRows":   rows,
		"buckets":      buckets,
		"ledgerQueue":  s.ledgerQueue.len(),
		"ledgerByExec": len(s.ledgerByExec),
	}
}

func TestPruneKeepsMemoryBounded(t *testing.T) {
	t.Parallel()
	s := New()
	const n = 3000
	for i := range n {
		// Spread over many principals and out of time order, as traffic
		// from many gateway goroutines would arrive.
		at := t0.Add(-time.Duration((i*7919)%n) * time.Second)
		call(t, s, fmt.Sprint("p", i%97), fmt.Sprint("k", i), at)
	}
	for _, size := range s.sizes() {
		require.NotZero(t, size)
	}

	cutoff := storage.Prune{IdempotencyBefore: t0.Add(time.Hour), QuotesBefore: t0.Add(time.Hour), LedgerBefore: t0.Add(time.Hour), Limit: pruneAll}
	var total storage.PruneResult
	for {
		res, err := s.Prune(t.Context(), cutoff)
		require.NoError(t, err)
		assert.LessOrEqual(t, res.Idempotency, pruneAll)
		if res == (storage.PruneResult{}) {
			break
		}
		total.Idempotency += res.Idempotency
		total.Quotes += res.Quotes
		total.Ledger += res.Ledger
	}
	assert.Equal(t, storage.PruneResult{Idempotency: n, Quotes: n, Ledger: n}, total)
	for name, size := range s.sizes() {
		assert.Zero(t, size, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Nil(t, s.quoteQueue.items, "an empty queue lets go of its array")
	assert.Nil(t, s.ledgerQueue.items)
}

func TestPrunePartialLedgerStaysConsistent(t *testing.T) {
	t.Parallel()
	s := New()
	// Two principals interleaved in time; pruning a few rows at a time must
	// drop exactly the oldest rows from each principal's own index.
	for i := range 20 {
		call(t, s, fmt.Sprint("p", i%2), fmt.Sprint("k", i), t0.Add(time.Duration(i)*time.Minute))
	}
	spend := func(p string) decimal.Decimal {
		used, err := s.MeasureLimits(t.Context(), p, []storage.Limit{{Measure: storage.MeasureSpend}})
		require.NoError(t, err)
		return used[0]
	}
	for pruned := 3; pruned <= 18; pruned += 3 {
		_, err := s.Prune(t.Context(), storage.Prune{LedgerBefore: t0.Add(time.Hour), Limit: 3})
		require.NoError(t, err)
		// Rows are pruned oldest first across principals: p0 owns the even
		// minutes, so it loses the odd one out.
		left0, left1 := 10-(pruned+1)/2, 10-pruned/2
		want0 := decimal.NewFromInt(int64(left0)).Mul(decimal.RequireFromString("0.11"))
		want1 := decimal.NewFromInt(int64(left1)).Mul(decimal.RequireFromString("0.11"))
		assert.True(t, want0.Equal(spend("p0")), "after %d: p0 %s, want %s", pruned, spend("p0"), want0)
		assert.True(t, want1.Equal(spend("p1")), "after %d: p1 %s, want %s", pruned, spend("p1"), want1)
		assert.Equal(t, left0+left1, s.sizes()["ledgerRows"])
	}
}

func TestPruneKeepsQuoteOfRunningCall(t *testing.T) {
	t.Parallel()
	s := New()
	ctx := t.Context()
	q := storage.Quote{
		ID: uuid.New(), Principal: "alice", ToolID: "tool-a", TotalUSD: decimal.RequireFromString("0.11"),
		CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute), State: storage.QuoteOpen,
	}
	require.NoError(t, s.CreateQuote(ctx, q))
	b := storage.Begin{
		Principal: "alice", Key: "k", Fingerprint: "fp", QuoteID: q.ID, ExecutionID: uuid.New(),
		ToolID: q.ToolID, AmountUSD: q.TotalUSD, LeaseToken: uuid.New(), LeaseUntil: t0.Add(time.Minute), Now: t0,
	}
	_, err := s.BeginExecution(ctx, b)
	require.NoError(t, err)

	// The quote expired while the run's process died; the retry after the
	// prune must still be able to take the call over.
	res, err := s.Prune(ctx, storage.Prune{QuotesBefore: t0.Add(10 * time.Minute), Limit: pruneAll})
	require.NoError(t, err)
	assert.Zero(t, res.Quotes)

	b.LeaseToken, b.Now, b.LeaseUntil = uuid.New(), t0.Add(11*time.Minute), t0.Add(12*time.Minute)
	took, err := s.BeginExecution(ctx, b)
	require.NoError(t, err)
	assert.True(t, took.TookOver)
}

func TestUnknownMeasureIsRejected(t *testing.T) {
	t.Parallel()
	s := New()
	_, err := s.MeasureLimits(t.Context(), "alice", []storage.Limit{{Measure: "tokens"}})
	require.Error(t, err)
}

// TestMeasureMatchesBruteForce checks the hourly sums against counting
// every row, for windows starting on and off bucket boundaries.
func TestMeasureMatchesBruteForce(t *testing.T) {
	t.Parallel()
	s := New()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(1, 2))
	type row struct {
		tool     string
		amount   decimal.Decimal
		at       time.Time
		released bool
	}
	var rows []row
	for i := range 600 {
		at := t0.Add(-time.Duration(rng.IntN(72*3600)) * time.Second)
		r := row{tool: fmt.Sprint("tool-", rng.IntN(3)), amount: decimal.New(rng.Int64N(10000), -4), at: at}
		q := storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: r.tool, TotalUSD: r.amount, ExpiresAt: at}
		require.NoError(t, s.CreateQuote(ctx, q))
		b := storage.Begin{
			Principal: "alice", Key: fmt.Sprint(i), QuoteID: q.ID, ExecutionID: uuid.New(),
			ToolID: r.tool, AmountUSD: r.amount, LeaseToken: uuid.New(), Now: at,
		}
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		switch rng.IntN(3) {
		case 0: // left running
		case 1:
			require.NoError(t, s.FinishExecution(ctx, storage.Finish{Principal: "alice", Key: b.Key, ExecutionID: b.ExecutionID, LeaseToken: b.LeaseToken, Status: storage.ExecutionCompleted, Charged: true}))
		case 2:
			r.released = true
			require.NoError(t, s.FinishExecution(ctx, storage.Finish{Principal: "alice", Key: b.Key, ExecutionID: b.ExecutionID, LeaseToken: b.LeaseToken, Status: storage.ExecutionFailed}))
		}
		rows = append(rows, r)
	}

	for range 300 {
		l := storage.Limit{Measure: storage.MeasureSpend, Since: t0.Add(-time.Duration(rng.IntN(80*3600)) * time.Second)}
		if rng.IntN(2) == 0 {
			l.Measure = storage.MeasureCalls
		}
		if rng.IntN(4) == 0 {
			l.Since = l.Since.Truncate(time.Hour)
		}
		if rng.IntN(2) == 0 {
			l.ToolID = fmt.Sprint("tool-", rng.IntN(4))
		}
		var (
			want       decimal.Decimal
			calls      int64
			wantOldest time.Time
		)
		for _, r := range rows {
			if r.at.Before(l.Since) || l.ToolID != "" && r.tool != l.ToolID || l.Measure == storage.MeasureSpend && r.released {
				continue
			}
			want, calls = want.Add(r.amount), calls+1
			if wantOldest.IsZero() || r.at.Before(wantOldest) {
				wantOldest = r.at
			}
		}
		if l.Measure == storage.MeasureCalls {
			want = decimal.NewFromInt(calls)
		}
		s.mu.Lock()
		got, oldest := s.measure("alice", l)
		s.mu.Unlock()
		require.True(t, want.Equal(got), "%+v: got %s, want %s", l, got, want)
		require.True(t, wantOldest.Equal(oldest), "%+v: oldest %s, want %s", l, oldest, wantOldest)
	}
}

// BenchmarkBeginExecutionWithLimits admits calls for a principal with a busy
// month behind it, checking the gateway's usual limits: per minute, per
// hour, per day and per month.
func BenchmarkBeginExecutionWithLimits(b *testing.B) {
	s := New()
	ctx := b.Context()
	admit := func(principal, key string, at time.Time, limits []storage.Limit) error {
		q := storage.Quote{ID: uuid.New(), Principal: principal, TotalUSD: decimal.RequireFromString("0.0011"), ExpiresAt: at}
		_ = s.CreateQuote(ctx, q)
		_, err := s.BeginExecution(ctx, storage.Begin{
			Principal: principal, Key: key, QuoteID: q.ID, ExecutionID: uuid.New(),
			AmountUSD: q.TotalUSD, Limits: limits, Now: at,
		})
		return err
	}
	// A month at 500 calls an hour for the benchmarked principal, and
	// others' traffic beside it.
	const history = 30 * 24 * 500
	for i := range history {
		at := t0.Add(-time.Duration(history-i) * 7200 * time.Millisecond)
		_ = admit("busy", fmt.Sprint("h", i), at, nil)
		if i%10 == 0 {
			_ = admit(fmt.Sprint("p", i%300), fmt.Sprint("o", i), at, nil)
		}
	}
	month := time.Date(t0.Year(), t0.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0)
	max := decimal.NewFromInt(1 << 40)
	for i := 0; b.Loop(); i++ {
		now := t0.Add(time.Duration(i) * time.Second)
		limits := []storage.Limit{
			{Measure: storage.MeasureCalls, Since: now.Add(-time.Minute), Max: max},
			{Measure: storage.MeasureCalls, Since: now.Add(-time.Hour), Max: max},
			{Measure: storage.MeasureSpend, Since: now.Truncate(24 * time.Hour), Max: max},
			{Measure: storage.MeasureSpend, Since: month, Max: max},
		}
		if err := admit("busy", fmt.Sprint("b", i), now, limits); err != nil {
			b.Fatal(err)
		}
	}
}

// pruneAll is the most rows of each kind one Prune of these tests deletes:
// the gateway's batch, more than any test stores. A store is handed
// complete parameters, so a test says how many too.
const pruneAll = 1000
