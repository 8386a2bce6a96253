package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
)

var t0 = time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)

// steps is a call that admits under one quote and completes, counting
// what the executor asks of it.
type steps struct {
	quote            uuid.UUID
	admits, resumes  int
	runs             int
	refusedWith      error
	claimed, records int
}

func (s *steps) Admit(context.Context, time.Time) (storage.Begin, error) {
	s.admits++
	return storage.Begin{QuoteID: s.quote, ToolID: "tool-a", AmountUSD: decimal.RequireFromString("0.10")}, nil
}

func (s *steps) Resume(context.Context, time.Time) (storage.Begin, error) {
	s.resumes++
	return storage.Begin{QuoteID: s.quote, ToolID: "tool-a", AmountUSD: decimal.RequireFromString("0.10")}, nil
}

func (s *steps) Refused(err error, _ time.Time) error {
	s.refusedWith = err
	return toolgatetype.Errorf(toolgatetype.CodeQuoteUsed, "refused")
}

func (s *steps) Run(context.Context, executor.Claim) (executor.Run, error) {
	s.runs++
	body := []byte(`{"status":"completed"}`)
	return executor.Run{Status: toolgatetype.StatusCompleted, Response: body, Finished: t0,
		Seal: func(int64, string) (storage.Sealed, error) { return storage.Sealed{Receipt: []byte(`{"seq":1}`)}, nil }}, nil
}

func (s *steps) Result(_ context.Context, _ executor.Claim, r executor.Run, stored []byte) *toolgatetype.CallResult {
	return &toolgatetype.CallResult{Execution: toolgatetype.Execution{Status: r.Status}, Body: stored}
}

func (s *steps) Claimed(context.Context, storage.BeginResult)           { s.claimed++ }
func (s *steps) Recorded(context.Context, executor.Claim, executor.Run) { s.records++ }

// retryingStore asks for the admission again, as a store whose earlier
// answers turned out out of date does, the first retries times.
type retryingStore struct {
	storage.Store
	retries int
}

func (s *retryingStore) BeginExecution(ctx context.Context, b storage.Begin) (storage.BeginResult, error) {
	if s.retries > 0 {
		s.retries--
		return storage.BeginResult{}, storage.ErrRetry
	}
	return s.Store.BeginExecution(ctx, b)
}

func newQuote(t *testing.T, s storage.Store) uuid.UUID {
	t.Helper()
	q := storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: "tool-a", ToolSlug: "a", ToolVersion: 1,
		ManifestDigest: "sha256:a", PriceUSD: decimal.RequireFromString("0.10"), FeeUSD: decimal.Zero,
		TotalUSD: decimal.RequireFromString("0.10"), CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)}
	require.NoError(t, s.CreateQuote(context.Background(), q))
	return q.ID
}

// TestExecuteRetriesTheAdmissionOnce: a store that asks for the admission
// again gets it once, from the reads up; asked twice, the call is refused
// as internal, and nothing ran.
func TestExecuteRetriesTheAdmissionOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for retries, want := range map[int]toolgatetype.Status{1: toolgatetype.StatusCompleted, 2: ""} {
		store := &retryingStore{Store: memory.New(), retries: retries}
		e := &executor.Executor{Store: store, Now: func() time.Time { return t0 }, Lease: time.Minute}
		s := &steps{quote: newQuote(t, store)}
		res, err := e.Execute(ctx, executor.Key{Principal: "alice", Key: "k1", Fingerprint: "f"}, s, s)
		assert.Equal(t, 2, s.admits, "retries %d: admitted again once", retries)
		if want == "" {
			require.True(t, toolgatetype.IsCode(err, toolgatetype.CodeInternal), "retries %d: %v", retries, err)
			assert.Zero(t, s.runs)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, want, res.Execution.Status)
		assert.Equal(t, []int{1, 1, 1}, []int{s.runs, s.claimed, s.records})
	}
}

// TestExecuteAnswersARefusalFromTheKey: a call refused by the store whose
// key holds a finished call of the same request is answered that call's
// stored result; of another request, idempotency_key_reused.
func TestExecuteAnswersARefusalFromTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memory.New()
	e := &executor.Executor{Store: store, Now: func() time.Time { return t0 }, Lease: time.Minute}
	first := &steps{quote: newQuote(t, store)}
	key := executor.Key{Principal: "alice", Key: "k1", Fingerprint: "f"}
	_, err := e.Execute(ctx, key, first, first)
	require.NoError(t, err)

	again := &steps{quote: first.quote}
	res, err := e.Execute(ctx, key, again, again)
	require.NoError(t, err)
	assert.True(t, res.Replayed)
	assert.Zero(t, again.runs, "a replay runs nothing")
	assert.ErrorIs(t, again.refusedWith, storage.ErrIdempotencyConflict)

	other := &steps{quote: first.quote}
	key.Fingerprint = "another request"
	_, err = e.Execute(ctx, key, other, other)
	assert.True(t, toolgatetype.IsCode(err, toolgatetype.CodeIdempotencyKeyReused), "%v", err)
}
