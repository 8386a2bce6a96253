package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// inTurn does its admissions in turn (storage.AdmitEach), as a fake
// would, whatever the store's own AdmitCall does.
type inTurn struct{ storage.Store }

func (s inTurn) AdmitCall(ctx context.Context, r storage.Reads, decide func(storage.ReadResult) (storage.Begin, error)) (storage.BeginResult, error) {
	return storage.AdmitEach(ctx, s.Store, r, decide)
}

// testAdmitCall holds AdmitCall, as the store does it and in turn
// (storage.AdmitEach), to its contract: the call is decided on what the
// store's methods answer at the time, and admitted as BeginExecution
// admits it; a decision's refusal is returned as it is, and then, as on
// the store's own refusal, nothing is written.
func testAdmitCall(t *testing.T, newStore newStoreFunc) {
	ways := []struct {
		name string
		wrap func(storage.Store) storage.Store
	}{
		{"AsTheStoreDoesIt", func(s storage.Store) storage.Store { return s }},
		{"InTurn", func(s storage.Store) storage.Store { return inTurn{s} }},
	}
	callReads := func(q storage.Quote) storage.Reads {
		return storage.Reads{Principal: q.Principal, Approval: true, ToolID: q.ToolID, SpendControls: true, QuoteID: q.ID}
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			t.Run("DecidesOnWhatTheMethodsAnswer", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				s := way.wrap(h.s)
				daily := dec("25.0000")
				require.NoError(t, h.s.PutSpendControls(h.ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &daily}))
				require.NoError(t, h.s.PutApproval(h.ctx, approval("alice", "tool-a", "sha256:a", toolgatetype.ApprovalNeverAsk)))
				// What a quote reads first, and a store may remember.
				_, err := s.ReadBatch(h.ctx, storage.Reads{Principal: "alice", Approval: true, ToolID: "tool-a", SpendControls: true})
				require.NoError(t, err)
				q := h.quote("alice", "tool-a", "0.10", t0)
				// Changed since: the call is decided on the change.
				tighter := dec("20.0000")
				require.NoError(t, h.s.PutSpendControls(h.ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &tighter}))

				var last storage.ReadResult
				b := beginFor(q, "k1", t0)
				got, err := s.AdmitCall(h.ctx, callReads(q), func(r storage.ReadResult) (storage.Begin, error) {
					last = r
					return b, nil
				})
				require.NoError(t, err)
				assert.Equal(t, b.ExecutionID, got.Execution.ID)
				assert.False(t, got.TookOver)

				require.NotNil(t, last.Quote)
				assertQuote(t, q, *last.Quote)
				require.NotNil(t, last.SpendControls)
				assert.Equal(t, "20", last.SpendControls.DailyLimitUSD.String())
				require.NotNil(t, last.Approval)
				assertApproval(t, approval("alice", "tool-a", "sha256:a", toolgatetype.ApprovalNeverAsk), *last.Approval)

				stored, err := h.s.GetQuote(h.ctx, q.ID)
				require.NoError(t, err)
				assert.Equal(t, storage.QuoteUsed, stored.State, "admitted as BeginExecution admits")
				rec, err := h.s.GetIdempotency(h.ctx, "alice", "k1")
				require.NoError(t, err)
				assert.Equal(t, b.ExecutionID, rec.ExecutionID)
				h.assertUsed("alice", "0.10", "1")
			})

			t.Run("ARefusalIsReturnedAsItIs", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				s := way.wrap(h.s)
				_, err := s.ReadBatch(h.ctx, storage.Reads{Principal: "alice", Approval: true, ToolID: "tool-a", SpendControls: true})
				require.NoError(t, err)
				q := h.quote("alice", "tool-a", "0.10", t0)
				refused := errors.New("refused")
				var decided []storage.ReadResult
				_, err = s.AdmitCall(h.ctx, callReads(q), func(r storage.ReadResult) (storage.Begin, error) {
					decided = append(decided, r)
					return storage.Begin{}, refused
				})
				assert.Same(t, refused, err, "the decision's error, as it is")
				require.NotEmpty(t, decided)
				last := decided[len(decided)-1]
				require.NotNil(t, last.Quote)
				assertQuote(t, q, *last.Quote)
				assert.Nil(t, last.SpendControls, "none stored")
				assert.Nil(t, last.Approval, "none stored")
				h.assertQuoteOpen(q.ID)
				h.assertUsed("alice", "0", "0")

				// Refused, the call's quote serves the next decision.
				_, err = s.AdmitCall(h.ctx, callReads(q), func(storage.ReadResult) (storage.Begin, error) {
					return beginFor(q, "k1", t0), nil
				})
				require.NoError(t, err)
				h.assertUsed("alice", "0.10", "1")
			})

			t.Run("TheStoresRefusalWritesNothing", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				s := way.wrap(h.s)
				q := h.quote("alice", "tool-a", "0.10", t0)
				h.begin(beginFor(q, "k1", t0))
				_, err := s.AdmitCall(h.ctx, callReads(q), func(storage.ReadResult) (storage.Begin, error) {
					return beginFor(q, "k2", t0), nil
				})
				assert.ErrorIs(t, err, storage.ErrQuoteUsed)
				h.assertKeyFree("alice", "k2")

				other := h.quote("alice", "tool-a", "0.10", t0.Add(time.Second))
				_, err = s.AdmitCall(h.ctx, callReads(other), func(storage.ReadResult) (storage.Begin, error) {
					return beginFor(other, "k3", t0.Add(time.Second), callsLimit("", t0.Add(-time.Hour), "1")), nil
				})
				var limitErr *storage.LimitError
				require.ErrorAs(t, err, &limitErr)
				h.assertKeyFree("alice", "k3")
				h.assertQuoteOpen(other.ID)
				h.assertUsed("alice", "0.10", "1")
			})
		})
	}
}
