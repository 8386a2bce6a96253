package postgres_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetype"
)

// t0 is "now" in these tests: a fixed, fake clock, far from the database's.
var t0 = time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)

var errNotFound = storage.ErrNotFound

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func testQuote(principal, toolID, total string, at time.Time) storage.Quote {
	return storage.Quote{
		ID:             uuid.New(),
		Principal:      principal,
		ToolID:         toolID,
		ToolSlug:       "slug-" + toolID,
		ToolVersion:    1,
		ManifestDigest: "sha256:" + toolID,
		PriceUSD:       dec(total),
		FeeUSD:         decimal.Zero,
		TotalUSD:       dec(total),
		CreatedAt:      at,
		ExpiresAt:      at.Add(5 * time.Minute),
		State:          storage.QuoteOpen,
	}
}

func testBegin(q storage.Quote, key string, at time.Time, limits ...storage.Limit) storage.Begin {
	return storage.Begin{
		Principal:   q.Principal,
		Key:         key,
		Fingerprint: "fp:" + key,
		QuoteID:     q.ID,
		ExecutionID: uuid.New(),
		ToolID:      q.ToolID,
		AmountUSD:   q.TotalUSD,
		Limits:      limits,
		LeaseToken:  uuid.New(),
		LeaseUntil:  at.Add(time.Minute),
		Now:         at,
	}
}

func testFinish(b storage.Begin, status storage.ExecutionStatus, at time.Time) storage.Finish {
	return storage.Finish{
		Principal:   b.Principal,
		Key:         b.Key,
		ExecutionID: b.ExecutionID,
		LeaseToken:  b.LeaseToken,
		Status:      status,
		Charged:     status == storage.ExecutionCompleted,
		Response:    []byte(`{"status":"` + string(status) + `"}`),
		Now:         at,
	}
}

// allTime measures everything the principal ever spent and called.
var allTime = []storage.Limit{
	{Measure: storage.MeasureSpend, Max: dec("0")},
	{Measure: storage.MeasureCalls, Max: dec("0")},
}

func assertUsed(t *testing.T, s storage.Store, principal, spend, calls string) {
	t.Helper()
	got, err := s.MeasureLimits(t.Context(), principal, allTime)
	require.NoError(t, err)
	assert.Truef(t, dec(spend).Equal(got[0]), "spend of %s: want %s, got %s", principal, spend, got[0])
	assert.Truef(t, dec(calls).Equal(got[1]), "calls of %s: want %s, got %s", principal, calls, got[1])
}

// Amounts come back exact at four decimals and times at the microsecond, in
// UTC, whatever zone they went in with.
func TestQuoteRoundTripsAmountsAndTimes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	at := time.Date(2030, 3, 15, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
	q := testQuote("alice", "tool-a", "0.11", at)
	q.PriceUSD, q.FeeUSD, q.TotalUSD = dec("0.1"), dec("0.01"), dec("0.11")
	require.NoError(t, s.CreateQuote(t.Context(), q))

	got, err := s.GetQuote(t.Context(), q.ID)
	require.NoError(t, err)
	assert.Equal(t, "0.1000", got.PriceUSD.StringFixed(4))
	assert.True(t, dec("0.01").Equal(got.FeeUSD))
	assert.True(t, dec("0.11").Equal(got.TotalUSD))
	assert.Equal(t, at.Truncate(time.Microsecond).UTC(), got.CreatedAt)
	assert.Equal(t, time.UTC, got.CreatedAt.Location())

	err = s.CreateQuote(t.Context(), q)
	assert.ErrorIs(t, err, storage.ErrAlreadyExists)
}

// BeginExecution writes the idempotency claim before it checks the quote
// and the limits; every later failure must roll that claim back.
func TestBeginFailureWritesNothing(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()

	used := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, used))
	_, err := s.BeginExecution(ctx, testBegin(used, "first", t0))
	require.NoError(t, err)

	fresh := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, fresh))
	dup := testBegin(fresh, "dup-exec", t0)
	dup.ExecutionID = testBegin(used, "x", t0).ExecutionID

	cases := []struct {
		name  string
		begin storage.Begin
		want  func(error) bool
	}{
		{"quote used by another key", testBegin(used, "second", t0), isErr(storage.ErrQuoteUsed)},
		{"quote of another principal", func() storage.Begin {
			b := testBegin(fresh, "other", t0)
			b.Principal = "bob"
			return b
		}(), isErr(storage.ErrQuoteNotFound)},
		{"unknown quote", func() storage.Begin {
			b := testBegin(fresh, "unknown", t0)
			b.QuoteID = uuid.New()
			return b
		}(), isErr(storage.ErrQuoteNotFound)},
		{"limit", testBegin(fresh, "over", t0, storage.Limit{Measure: storage.MeasureSpend, Max: dec("0.20")}),
			func(err error) bool { var le *storage.LimitError; return errors.As(err, &le) }},
	}
	for _, tc := range cases {
		_, err := s.BeginExecution(ctx, tc.begin)
		assert.Truef(t, tc.want(err), "%s: unexpected error %v", tc.name, err)
		_, err = s.GetIdempotency(ctx, tc.begin.Principal, tc.begin.Key)
		assert.ErrorIsf(t, err, storage.ErrNotFound, "%s: key must stay free", tc.name)
		_, err = s.GetExecution(ctx, tc.begin.ExecutionID)
		assert.ErrorIsf(t, err, storage.ErrNotFound, "%s: no execution", tc.name)
	}
	q, err := s.GetQuote(ctx, fresh.ID)
	require.NoError(t, err)
	assert.Equal(t, storage.QuoteOpen, q.State, "the fresh quote must still be open")
	assertUsed(t, s, "alice", "0.11", "1")
	assertUsed(t, s, "bob", "0", "0")
}

func isErr(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// A colliding execution id is a primary-key violation, reported as
// ErrAlreadyExists through the single translation point, and rolls back
// the claim and the quote.
func TestBeginDuplicateExecutionID(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	q1 := testQuote("alice", "tool-a", "0.11", t0)
	q2 := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, q1))
	require.NoError(t, s.CreateQuote(ctx, q2))
	b1 := testBegin(q1, "k1", t0)
	_, err := s.BeginExecution(ctx, b1)
	require.NoError(t, err)

	b2 := testBegin(q2, "k2", t0)
	b2.ExecutionID = b1.ExecutionID
	_, err = s.BeginExecution(ctx, b2)
	assert.ErrorIs(t, err, storage.ErrAlreadyExists)
	_, err = s.GetIdempotency(ctx, "alice", "k2")
	assert.ErrorIs(t, err, storage.ErrNotFound)
	got, err := s.GetQuote(ctx, q2.ID)
	require.NoError(t, err)
	assert.Equal(t, storage.QuoteOpen, got.State)
}

// Pruning executions after a day must keep the month's spend measurable,
// must never touch a running execution with a live lease, and deletes at
// most Limit rows of each kind per call.
func TestPruneKeepsLedgerAndLiveLeases(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()

	var finished []storage.Begin
	for i := range 5 {
		q := testQuote("alice", "tool-a", "1.00", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := testBegin(q, "done-"+string(rune('a'+i)), t0)
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, t0.Add(time.Second))))
		finished = append(finished, b)
	}
	// A run begun long ago that still holds a lease a day later.
	q := testQuote("alice", "tool-a", "1.00", t0)
	require.NoError(t, s.CreateQuote(ctx, q))
	live := testBegin(q, "live", t0)
	live.LeaseUntil = t0.Add(48 * time.Hour)
	_, err := s.BeginExecution(ctx, live)
	require.NoError(t, err)

	dayLater := t0.Add(25 * time.Hour)
	p := storage.Prune{IdempotencyBefore: dayLater.Add(-24 * time.Hour).Add(time.Second), Limit: 2}
	res, err := s.Prune(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, storage.PruneResult{Idempotency: 2}, res, "bounded by Limit")

	total := 2
	for {
		res, err := s.Prune(ctx, p)
		require.NoError(t, err)
		if res.Idempotency == 0 {
			break
		}
		total += res.Idempotency
	}
	assert.Equal(t, 5, total, "every finished record, and only those")

	for _, b := range finished {
		_, err := s.GetExecution(ctx, b.ExecutionID)
		assert.ErrorIs(t, err, storage.ErrNotFound, "pruned with its record")
	}
	_, err = s.GetExecution(ctx, live.ExecutionID)
	require.NoError(t, err, "running execution with a live lease is kept")
	_, err = s.GetIdempotency(ctx, "alice", "live")
	require.NoError(t, err)

	assertUsed(t, s, "alice", "6", "6") // the ledger outlives the executions
	require.NoError(t, s.FinishExecution(ctx, testFinish(live, storage.ExecutionCompleted, dayLater)))
}

// Usage counters are maintained by FinishExecution's transaction; finishes
// racing on two instances must count every completion and each principal
// once.
func TestUsageCountersAcrossInstances(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	stores := []*postgres.Store{openInstance(t, schema), openInstance(t, schema)}
	ctx := t.Context()

	const calls, principals = 40, 5
	begins := make([]storage.Begin, calls)
	for i := range calls {
		q := testQuote("p"+string(rune('0'+i%principals)), "tool-a", "0.01", t0)
		require.NoError(t, stores[0].CreateQuote(ctx, q))
		begins[i] = testBegin(q, uuid.NewString(), t0)
		_, err := stores[i%2].BeginExecution(ctx, begins[i])
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, calls)
	for i := range calls {
		wg.Go(func() {
			status := storage.ExecutionCompleted
			if i == 0 {
				status = storage.ExecutionFailed // not counted
			}
			errs[i] = stores[i%2].FinishExecution(ctx, testFinish(begins[i], status, t0.Add(time.Second)))
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "finish %d", i)
	}
	u, err := stores[1].Usage(ctx, "tool-a")
	require.NoError(t, err)
	assert.Equal(t, storage.Usage{Count: calls - 1, UniqueUsers: principals}, u)
	all, err := stores[0].UsageAll(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]storage.Usage{"tool-a": u}, all)
	none, err := stores[0].Usage(ctx, "unused")
	require.NoError(t, err)
	assert.Zero(t, none)
}

// Approvals list in Go's byte order, not the database's collation.
func TestListApprovalsByteOrder(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ids := []string{"b-tool", "B-tool", "_tool", "a-tool"}
	for _, id := range ids {
		require.NoError(t, s.PutApproval(t.Context(), storage.Approval{
			Principal: "alice", ToolID: id, ManifestDigest: "sha256:x", Mode: toolgatetype.ApprovalNeverAsk, UpdatedAt: t0,
		}))
	}
	list, err := s.ListApprovals(t.Context(), "alice")
	require.NoError(t, err)
	var got []string
	for _, a := range list {
		got = append(got, a.ToolID)
	}
	assert.Equal(t, []string{"B-tool", "_tool", "a-tool", "b-tool"}, got)
}

// Spend controls read back exactly as put, amounts with their scale.
func TestSpendControlsRoundTrip(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	daily, perCall := dec("5.5000"), dec("25")
	perMinute, allowed := 10, false
	in := toolgatetype.SpendControls{
		DailyLimitUSD:      &daily,
		RateLimitPerMinute: &perMinute,
		Tools: map[string]toolgatetype.ToolSpendControls{
			"goal-data": {Allowed: &allowed, MaxPerCallUSD: &perCall},
		},
	}
	require.NoError(t, s.PutSpendControls(t.Context(), "alice", in))
	got, err := s.GetSpendControls(t.Context(), "alice")
	require.NoError(t, err)
	assert.Equal(t, in, got)
	assert.Equal(t, int32(-4), got.DailyLimitUSD.Exponent(), "scale kept")

	_, err = s.GetSpendControls(t.Context(), "bob")
	assert.ErrorIs(t, err, storage.ErrNotFound)
}

// Close releases only a pool the Store opened itself.
func TestCloseLeavesCallersPool(t *testing.T) {
	t.Parallel()
	pool := sharedPool(t)
	s, err := postgres.New(t.Context(), pool, &postgres.Config{Schema: newSchema(t)})
	require.NoError(t, err)
	s.Close()
	require.NoError(t, pool.Ping(t.Context()), "the caller's pool must stay open")
}
