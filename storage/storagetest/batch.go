package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// methodsOnly does its reads method by method (storage.ReadEach), as a
// fake would, whatever the store's own ReadBatch does.
type methodsOnly struct{ storage.Store }

func (m methodsOnly) ReadBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	return storage.ReadEach(ctx, m.Store, r)
}

// testReadBatch holds ReadBatch, as the store does it and method by
// method (storage.ReadEach), to what the Store's own methods answer, and
// checks that a batch that fails stores nothing.
func testReadBatch(t *testing.T, newStore newStoreFunc) {
	ways := []struct {
		name string
		wrap func(storage.Store) storage.Store
	}{
		{"AsTheStoreDoesIt", func(s storage.Store) storage.Store { return s }},
		{"MethodByMethod", func(s storage.Store) storage.Store { return methodsOnly{s} }},
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			t.Run("AnswersAsTheMethodsDo", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				s := way.wrap(h.s)
				h.call("alice", "tool-a", "1.25", "k1", storage.ExecutionCompleted, t0.Add(-time.Hour))
				h.admit("alice", "tool-b", "0.50", "k2", t0.Add(-time.Minute))
				q := h.quote("alice", "tool-a", "0.10", t0)
				require.NoError(t, h.s.PutApproval(h.ctx, approval("alice", "tool-a", "sha256:a", toolgatetype.ApprovalNeverAsk)))
				max := dec("25.0000")
				require.NoError(t, h.s.PutSpendControls(h.ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &max}))
				limits := []storage.Limit{
					spendLimit("", t0.Truncate(24*time.Hour), "0"),
					spendLimit("tool-a", time.Time{}, "0"),
					callsLimit("", t0.Add(-time.Hour), "0"),
				}
				created := newQuote("alice", "tool-a", "0.10", t0)
				_, grant := h.granted("alice", "tool-a", "k3", t0)

				got, err := s.ReadBatch(h.ctx, storage.Reads{
					Principal: "alice", Approval: true, ToolID: "tool-a", SpendControls: true,
					QuoteID: q.ID, GrantID: grant.ID, Limits: limits, CreateQuote: &created,
				})
				require.NoError(t, err)

				require.NotNil(t, got.Grant)
				assertApprovalRequest(t, h.stored(grant.ID), *got.Grant)

				wantApproval, err := h.s.GetApproval(h.ctx, "alice", "tool-a")
				require.NoError(t, err)
				require.NotNil(t, got.Approval)
				assertApproval(t, wantApproval, *got.Approval)
				wantControls, err := h.s.GetSpendControls(h.ctx, "alice")
				require.NoError(t, err)
				assert.Equal(t, wantControls, *got.SpendControls)
				require.NotNil(t, got.Quote)
				assertQuote(t, q, *got.Quote)
				wantUsed, err := h.s.MeasureLimits(h.ctx, "alice", limits)
				require.NoError(t, err)
				require.Len(t, got.Used, len(limits))
				for i := range limits {
					assert.Truef(t, wantUsed[i].Equal(got.Used[i]), "limit %d: want %s, got %s", i, wantUsed[i], got.Used[i])
				}
				stored, err := h.s.GetQuote(h.ctx, created.ID)
				require.NoError(t, err, "the quote is stored with the reads")
				assertQuote(t, created, stored)
			})

			t.Run("AbsentIsNilNotAnError", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				got, err := way.wrap(h.s).ReadBatch(h.ctx, storage.Reads{
					Principal: "nobody", Approval: true, ToolID: "tool-a", SpendControls: true, QuoteID: uuid.New(),
					GrantID: uuid.New(),
				})
				require.NoError(t, err)
				assert.Equal(t, storage.ReadResult{}, got)
			})

			t.Run("OnlyWhatIsAskedFor", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				q := h.quote("alice", "tool-a", "0.10", t0)
				require.NoError(t, h.s.PutApproval(h.ctx, approval("alice", "tool-a", "sha256:a", toolgatetype.ApprovalNeverAsk)))
				got, err := way.wrap(h.s).ReadBatch(h.ctx, storage.Reads{Principal: "alice", QuoteID: q.ID, ToolID: "tool-a"})
				require.NoError(t, err)
				assert.Nil(t, got.Approval, "an approval not asked for is not read")
				assert.Nil(t, got.Grant, "a grant not asked for is not read")
				require.NotNil(t, got.Quote)
				assertQuote(t, q, *got.Quote)
			})

			t.Run("AKeyHoldingARecordStoresNoQuote", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				h.call("alice", "tool-a", "1.25", "k1", storage.ExecutionCompleted, t0.Add(-time.Hour))
				want, err := h.s.GetIdempotency(h.ctx, "alice", "k1")
				require.NoError(t, err)
				for _, max := range []int{0, 5} {
					retry := newQuote("alice", "tool-a", "0.10", t0)
					got, err := way.wrap(h.s).ReadBatch(h.ctx, storage.Reads{
						Principal: "alice", SpendControls: true, Key: "k1", CreateQuote: &retry, MaxOpenQuotes: max,
					})
					require.NoError(t, err)
					require.NotNil(t, got.Prior, "the key's record")
					assert.Equal(t, want.Fingerprint, got.Prior.Fingerprint)
					assert.Equal(t, want.ExecutionID, got.Prior.ExecutionID)
					assert.True(t, got.Prior.Finished)
					assert.JSONEq(t, string(want.Response), string(got.Prior.Response))
					_, err = h.s.GetQuote(h.ctx, retry.ID)
					assert.ErrorIs(t, err, storage.ErrNotFound, "no quote is stored for a key that holds a record (cap %d)", max)

					fresh := newQuote("alice", "tool-a", "0.10", t0)
					got, err = way.wrap(h.s).ReadBatch(h.ctx, storage.Reads{
						Principal: "alice", SpendControls: true, Key: "k2", CreateQuote: &fresh, MaxOpenQuotes: max,
					})
					require.NoError(t, err)
					assert.Nil(t, got.Prior, "a new key holds nothing")
					stored, err := h.s.GetQuote(h.ctx, fresh.ID)
					require.NoError(t, err, "a new key's quote is stored (cap %d)", max)
					assertQuote(t, fresh, stored)
				}
			})

			t.Run("FailureStoresNothing", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				taken := h.quote("alice", "tool-a", "0.10", t0)
				again := newQuote("alice", "tool-b", "0.20", t0)
				again.ID = taken.ID
				_, err := way.wrap(h.s).ReadBatch(h.ctx, storage.Reads{Principal: "alice", SpendControls: true, CreateQuote: &again})
				assert.ErrorIs(t, err, storage.ErrAlreadyExists)
				stored, err := h.s.GetQuote(h.ctx, taken.ID)
				require.NoError(t, err)
				assertQuote(t, taken, stored)

				// A read that fails (a limit no store can measure) stores no quote.
				fresh := newQuote("alice", "tool-a", "0.10", t0)
				_, err = way.wrap(h.s).ReadBatch(h.ctx, storage.Reads{
					Principal:   "alice",
					Limits:      []storage.Limit{{Measure: "bogus", Since: t0}},
					CreateQuote: &fresh,
				})
				assert.Error(t, err)
				_, err = h.s.GetQuote(context.WithoutCancel(h.ctx), fresh.ID)
				assert.ErrorIs(t, err, storage.ErrNotFound)
			})
		})
	}
}
