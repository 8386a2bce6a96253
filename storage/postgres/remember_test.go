package postgres_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// TestRememberedReadsOutOfDateAreDecidedAgain changes, on a second
// instance, what the first instance remembers from a quote it issued, and
// then calls under that quote on the first instance, where the call's
// reads are answered from memory. The admission finds what changed and
// admits nothing, and the call is decided again on fresh reads: each
// caller is refused exactly as a call quoted after the change would be,
// the provider is never reached, and once the change is undone the same
// key runs, since the refusal stored nothing.
func TestRememberedReadsOutOfDateAreDecidedAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := twoGateways(t, toolgatetest.NewUpstream(), nil)
	quoter, other := c.gws[0], c.gws[1]

	t.Run("spend controls tightened", func(t *testing.T) {
		q := c.quote(t, 0, "alice")
		tight := decimal.RequireFromString("0.1000") // under the call's 0.1100
		require.NoError(t, other.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &tight}))
		_, err := quoter.Call(ctx, "alice", echoCall(q, "k1"))
		requireCode(t, err, toolgatetype.CodeSpendLimitExceeded)
		assert.EqualValues(t, 0, c.provider.Calls(), "the provider is not reached")

		loose := decimal.RequireFromString("1.0000")
		require.NoError(t, other.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &loose}))
		res, err := quoter.Call(ctx, "alice", echoCall(q, "k1"))
		require.NoError(t, err)
		assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	})

	t.Run("approval asked for every call", func(t *testing.T) {
		q := c.quote(t, 0, "bob")
		require.NotNil(t, q.Quote.ManifestDigest)
		_, err := other.SetApproval(ctx, "bob", "echo", toolgatetype.ApprovalAskEveryCall, *q.Quote.ManifestDigest)
		require.NoError(t, err)
		_, err = quoter.Call(ctx, "bob", echoCall(q, "k1"))
		requireCode(t, err, toolgatetype.CodeApprovalRequired)

		approved := echoCall(q, "k1")
		approved.ApprovalDigest = *q.Quote.ManifestDigest
		res, err := quoter.Call(ctx, "bob", approved)
		require.NoError(t, err)
		assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	})

	t.Run("quote used on the other instance", func(t *testing.T) {
		q := c.quote(t, 0, "carol")
		res, err := other.Call(ctx, "carol", echoCall(q, "theirs"))
		require.NoError(t, err)
		require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
		_, err = quoter.Call(ctx, "carol", echoCall(q, "mine"))
		requireCode(t, err, toolgatetype.CodeQuoteUsed)
	})

	assert.EqualValues(t, 3, c.provider.Calls(), "one run per call admitted")
	assertUsed(t, c.stores[0], "alice", "0.1100", "1")
}

// TestRememberedReadsAreCheckedAtAdmission holds the Store's memory to its
// side of the bargain (the storage contract leaves it to the Store, see
// AdmitCall): ReadBatch answers from the database; what AdmitCall answers
// from memory is what the Store's methods answered; a decision that
// refuses what memory answered is made again on what the database
// answers; and an admission decided on memory admits only while it is
// still true, storing nothing once the spend controls or the approval
// changed, after which the reads are answered afresh and the same call is
// admitted.
func TestRememberedReadsAreCheckedAtAdmission(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s, other := openInstance(t, schema), openInstance(t, schema)
	quote := func() storage.Quote {
		t.Helper()
		q := testQuote("alice", "tool-a", "0.10", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		return q
	}
	callReads := func(q storage.Quote) storage.Reads {
		return storage.Reads{Principal: "alice", Approval: true, ToolID: "tool-a", SpendControls: true, QuoteID: q.ID}
	}
	assertKeyFree := func(key string) {
		t.Helper()
		_, err := s.GetIdempotency(ctx, "alice", key)
		assert.ErrorIs(t, err, storage.ErrNotFound, "key %q must not be claimed", key)
	}
	assertQuoteOpen := func(id uuid.UUID) {
		t.Helper()
		q, err := s.GetQuote(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, storage.QuoteOpen, q.State, "quote must still be open")
	}
	approval := func(mode toolgatetype.StandingMode) storage.Approval {
		return storage.Approval{Principal: "alice", ToolID: "tool-a", ManifestDigest: "sha256:a", Mode: mode, UpdatedAt: t0}
	}
	daily := dec("25.0000")
	require.NoError(t, s.PutSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &daily}))
	require.NoError(t, s.PutApproval(ctx, approval(toolgatetype.ApprovalNeverAsk)))
	// What a quote reads first, and the Store remembers.
	_, err := s.ReadBatch(ctx, storage.Reads{Principal: "alice", Approval: true, ToolID: "tool-a", SpendControls: true})
	require.NoError(t, err)

	// ReadBatch reads the database, whatever is remembered.
	q := quote()
	require.True(t, s.Recalls(callReads(q)), "a call's reads are remembered")
	tighter := dec("20.0000")
	require.NoError(t, other.PutSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &tighter}))
	read, err := s.ReadBatch(ctx, callReads(q))
	require.NoError(t, err)
	require.NotNil(t, read.SpendControls)
	assert.Equal(t, "20", read.SpendControls.DailyLimitUSD.String(), "what another instance stored")
	require.NoError(t, s.PutSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &daily}))
	_, err = s.ReadBatch(ctx, storage.Reads{Principal: "alice", Approval: true, ToolID: "tool-a", SpendControls: true})
	require.NoError(t, err)

	// A decision that refuses is made on what the methods answer, last.
	q = quote()
	require.True(t, s.Recalls(callReads(q)))
	refused := errors.New("refused")
	decided := 0
	_, err = s.AdmitCall(ctx, callReads(q), func(storage.ReadResult) (storage.Begin, error) {
		decided++
		return storage.Begin{}, refused
	})
	require.ErrorIs(t, err, refused, "the decision's error, as it is")
	assert.Equal(t, 2, decided, "decided on memory, then on the database")
	assert.False(t, s.Recalls(callReads(q)), "the last decision is made on the database's answer")

	// A decision that admits is made once, on memory, which the admission
	// finds still true.
	q = quote()
	require.True(t, s.Recalls(callReads(q)))
	decided = 0
	_, err = s.AdmitCall(ctx, callReads(q), func(got storage.ReadResult) (storage.Begin, error) {
		decided++
		require.NotNil(t, got.SpendControls)
		assert.Equal(t, "25", got.SpendControls.DailyLimitUSD.String())
		require.NotNil(t, got.Approval)
		assert.Equal(t, toolgatetype.ApprovalNeverAsk, got.Approval.Mode)
		return testBegin(q, "k1", t0), nil
	})
	require.NoError(t, err)
	assert.Equal(t, 1, decided, "a decision that admits is made once")

	for name, c := range map[string]struct {
		change func()
		seen   func(storage.ReadResult) bool
	}{
		"spend controls": {
			func() {
				require.NoError(t, s.PutSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &tighter}))
			},
			func(r storage.ReadResult) bool { return r.SpendControls.DailyLimitUSD.Equal(tighter) },
		},
		"approval": {
			func() { require.NoError(t, s.PutApproval(ctx, approval(toolgatetype.ApprovalAskEveryCall))) },
			func(r storage.ReadResult) bool {
				return r.Approval != nil && r.Approval.Mode == toolgatetype.ApprovalAskEveryCall
			},
		},
		"approval withdrawn": {
			func() { require.NoError(t, s.DeleteApproval(ctx, "alice", "tool-a")) },
			func(r storage.ReadResult) bool { return r.Approval == nil },
		},
	} {
		q := quote()
		require.True(t, s.Recalls(callReads(q)), name)
		b := testBegin(q, "after "+name, t0)
		var reads []storage.ReadResult
		_, err := s.AdmitCall(ctx, callReads(q), func(r storage.ReadResult) (storage.Begin, error) {
			reads = append(reads, r)
			if len(reads) == 1 {
				c.change() // after the decision on memory, before its admission
			} else {
				// The admission decided on memory stored nothing.
				assertKeyFree(b.Key)
				assertQuoteOpen(q.ID)
			}
			return b, nil
		})
		require.NoError(t, err, "%s: the same call is admitted", name)
		require.Len(t, reads, 2, "%s: decided again", name)
		assert.False(t, c.seen(reads[0]), "%s: memory's answer is from before", name)
		assert.True(t, c.seen(reads[1]), "%s: reads are answered afresh", name)
	}
	assertUsed(t, s, "alice", "0.4000", "4")
}
