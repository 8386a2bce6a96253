package executor_test

import (
	"context"
	"fmt"
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
	reads            int
	admits, resumes  int
	runs             int
	refusedWith      error
	claimed, records int
}

// call is the executor's call of s under k.
func (s *steps) call(k executor.Key) *executor.Call {
	return &executor.Call{
		Key:   k,
		Admit: executor.Admit{Reads: s.Reads, Decide: s.Decide, Resume: s.Resume, Explain: s.Refused},
		Run:   executor.Run{Do: s.Run},
		Hooks: []executor.Hooks{{
			Claimed: func(context.Context, *executor.Call, storage.BeginResult) { s.claimed++ },
			Ran:     func(context.Context, *executor.Call, executor.Claim, *executor.Record) { s.records++ },
		}},
	}
}

func (s *steps) Reads(context.Context) (storage.Reads, error) {
	s.reads++
	return storage.Reads{Principal: "alice", QuoteID: s.quote, SpendControls: true}, nil
}

func (s *steps) Decide(context.Context, storage.ReadResult, time.Time) (storage.Begin, error) {
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

func (s *steps) Run(context.Context, executor.Claim) (executor.Record, error) {
	s.runs++
	body := []byte(`{"status":"completed"}`)
	return executor.Record{Status: toolgatetype.StatusCompleted, Response: body, Finished: t0,
		Seal:   func(int64, string) (storage.Sealed, error) { return storage.Sealed{Receipt: []byte(`{"seq":1}`)}, nil },
		Result: &toolgatetype.CallResult{Execution: toolgatetype.Execution{Status: toolgatetype.StatusCompleted}}}, nil
}

// decidingAgainStore decides each call twice, as a store whose first
// answer to the reads turned out out of date at admission does (see
// storage.Store.AdmitCall): the first decision is admitted nowhere.
type decidingAgainStore struct{ storage.Store }

func (s decidingAgainStore) AdmitCall(ctx context.Context, r storage.Reads, decide func(storage.ReadResult) (storage.Begin, error)) (storage.BeginResult, error) {
	if _, err := decide(storage.ReadResult{}); err != nil {
		return storage.BeginResult{}, err
	}
	return storage.AdmitEach(ctx, s.Store, r, decide)
}

func newQuote(t *testing.T, s storage.Store) uuid.UUID {
	t.Helper()
	q := storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: "tool-a", ToolSlug: "a", ToolVersion: 1,
		ManifestDigest: "sha256:a", PriceUSD: decimal.RequireFromString("0.10"), FeeUSD: decimal.Zero,
		TotalUSD: decimal.RequireFromString("0.10"), CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)}
	require.NoError(t, s.CreateQuote(context.Background(), q))
	return q.ID
}

// TestExecuteRunsTheLastDecision: a store that has a call decided again
// before it admits it runs the call once, as the last decision made it,
// on the one claim the store gave.
func TestExecuteRunsTheLastDecision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := decidingAgainStore{memory.New()}
	e := &executor.Executor{Store: store, Now: func() time.Time { return t0 }, Lease: time.Minute}
	s := &steps{quote: newQuote(t, store)}
	res, err := e.Execute(ctx, s.call(executor.Key{Principal: "alice", Key: "k1", Fingerprint: "f"}))
	require.NoError(t, err)
	assert.Equal(t, 2, s.admits, "decided again once")
	assert.Equal(t, 1, s.reads, "the reads asked for once")
	assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	assert.Equal(t, []int{1, 1, 1}, []int{s.runs, s.claimed, s.records})
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
	_, err := e.Execute(ctx, first.call(key))
	require.NoError(t, err)

	again := &steps{quote: first.quote}
	res, err := e.Execute(ctx, again.call(key))
	require.NoError(t, err)
	assert.True(t, res.Replayed)
	assert.Zero(t, again.runs, "a replay runs nothing")
	assert.ErrorIs(t, again.refusedWith, storage.ErrIdempotencyConflict)

	other := &steps{quote: first.quote}
	key.Fingerprint = "another request"
	_, err = e.Execute(ctx, other.call(key))
	assert.True(t, toolgatetype.IsCode(err, toolgatetype.CodeIdempotencyKeyReused), "%v", err)
}

// TestExecuteTellsItsHooks: every hook a call is given, the gateway's or
// a user's beside it, is told at the executor's own points, in order: a
// call that runs begins, is claimed, ran and finishes with its result; a
// retry the store refuses begins, is refused and finishes with the
// earlier call's replayed result.
func TestExecuteTellsItsHooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memory.New()
	e := &executor.Executor{Store: store, Now: func() time.Time { return t0 }, Lease: time.Minute}
	type ctxKey struct{}
	var seen []string
	told := func(name string) executor.Hooks {
		return executor.Hooks{
			Begin: func(ctx context.Context, c *executor.Call) context.Context {
				seen = append(seen, name+" begin")
				return context.WithValue(ctx, ctxKey{}, name)
			},
			Claimed: func(context.Context, *executor.Call, storage.BeginResult) { seen = append(seen, name+" claimed") },
			Refused: func(_ context.Context, c *executor.Call, err error) {
				var te *toolgatetype.Error
				require.ErrorAs(t, err, &te)
				seen = append(seen, name+" refused "+string(te.Code))
			},
			Ran: func(context.Context, *executor.Call, executor.Claim, *executor.Record) {
				seen = append(seen, name+" ran")
			},
			Finished: func(ctx context.Context, _ *executor.Call, res *toolgatetype.CallResult, err error) {
				require.NoError(t, err)
				seen = append(seen, fmt.Sprintf("%s finished replayed=%t, begun by %v", name, res.Replayed, ctx.Value(ctxKey{})))
			},
		}
	}
	key := executor.Key{Principal: "alice", Key: "k1", Fingerprint: "f"}
	s := &steps{quote: newQuote(t, store)}
	c := s.call(key)
	c.Hooks = []executor.Hooks{told("gateway"), told("user")}
	_, err := e.Execute(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"gateway begin", "user begin",
		"gateway claimed", "user claimed",
		"gateway ran", "user ran",
		"gateway finished replayed=false, begun by user", "user finished replayed=false, begun by user",
	}, seen)

	seen = nil
	again := (&steps{quote: s.quote}).call(key)
	again.Hooks = []executor.Hooks{told("user")}
	_, err = e.Execute(ctx, again)
	require.NoError(t, err)
	assert.Equal(t, []string{"user begin", "user refused quote_used", "user finished replayed=true, begun by user"}, seen)
}
