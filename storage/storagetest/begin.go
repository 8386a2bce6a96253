package storagetest

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

func testBegin(t *testing.T, newStore newStoreFunc) {
	t.Run("NewKeyClaimsKeyMarksQuoteAndReserves", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		b := beginFor(q, "key-1", t0)

		res, err := h.s.BeginExecution(h.ctx, b)
		require.NoError(t, err)
		assert.False(t, res.TookOver)
		assertRunning(t, b, res.Execution)

		got, err := h.s.GetExecution(h.ctx, b.ExecutionID)
		require.NoError(t, err)
		assertRunning(t, b, got)

		rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		assert.Equal(t, "alice", rec.Principal)
		assert.Equal(t, "key-1", rec.Key)
		assert.Equal(t, b.Fingerprint, rec.Fingerprint)
		assert.Equal(t, b.ExecutionID, rec.ExecutionID)
		assert.Equal(t, b.LeaseToken, rec.LeaseToken)
		assertTime(t, b.LeaseUntil, rec.LeaseUntil, "LeaseUntil")
		assertTime(t, t0, rec.CreatedAt, "CreatedAt")
		assert.False(t, rec.Finished)
		assert.Empty(t, rec.Response)

		used, err := h.s.GetQuote(h.ctx, q.ID)
		require.NoError(t, err)
		assert.Equal(t, storage.QuoteUsed, used.State)
		assert.Equal(t, "key-1", used.UsedByKey)

		h.assertUsed("alice", "0.11", "1")
		h.assertKeyFree("bob", "key-1") // keys are scoped to the principal
	})

	t.Run("SameKeyOtherPrincipalIsIndependent", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.admit("alice", "tool-a", "0.11", "shared-key", t0)
		bob := h.admit("bob", "tool-a", "0.22", "shared-key", t0)

		rec, err := h.s.GetIdempotency(h.ctx, "bob", "shared-key")
		require.NoError(t, err)
		assert.Equal(t, bob.ExecutionID, rec.ExecutionID)
		h.assertUsed("alice", "0.11", "1")
		h.assertUsed("bob", "0.22", "1")
	})

	t.Run("ExistingKeyConflicts", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name        string
			finished    bool
			fingerprint string        // of the retry; empty means the same
			retryAfter  time.Duration // since the first Begin, whose lease is one minute
		}{
			{name: "finished same fingerprint", finished: true, retryAfter: 2 * lease},
			{name: "finished other fingerprint", finished: true, fingerprint: "other", retryAfter: 2 * lease},
			{name: "running lease live", retryAfter: lease / 2},
			{name: "running lease ends exactly now", retryAfter: lease},
			{name: "running lease live other fingerprint", fingerprint: "other", retryAfter: lease / 2},
			{name: "running lease expired other fingerprint", fingerprint: "other", retryAfter: 2 * lease},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				first := h.admit("alice", "tool-a", "0.11", "key-1", t0)
				if tc.finished {
					h.finish(first, storage.ExecutionCompleted, `{"n":1}`, t0.Add(time.Second))
				}
				at := t0.Add(tc.retryAfter)
				fresh := h.quote("alice", "tool-a", "0.11", at)
				retry := beginFor(fresh, "key-1", at)
				if tc.fingerprint != "" {
					retry.Fingerprint = tc.fingerprint
				}

				_, err := h.s.BeginExecution(h.ctx, retry)
				require.ErrorIs(t, err, storage.ErrIdempotencyConflict)

				rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
				require.NoError(t, err)
				assert.Equal(t, first.ExecutionID, rec.ExecutionID)
				assert.Equal(t, first.LeaseToken, rec.LeaseToken, "a refused retry must not take the lease")
				assert.Equal(t, first.Fingerprint, rec.Fingerprint)
				h.assertQuoteOpen(fresh.ID)
				_, err = h.s.GetExecution(h.ctx, retry.ExecutionID)
				require.ErrorIs(t, err, storage.ErrNotFound)
				h.assertUsed("alice", "0.11", "1")
			})
		}
	})

	t.Run("TakeoverAfterLeaseExpiry", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		first := beginFor(q, "key-1", t0)
		h.begin(first)

		// Limits that the reservation already made would break are not
		// re-checked: the call was admitted once.
		at := first.LeaseUntil.Add(time.Second)
		retry := beginFor(q, "key-1", at,
			spendLimit("", time.Time{}, "0.11"),
			callsLimit("", time.Time{}, "1"),
		)
		res, err := h.s.BeginExecution(h.ctx, retry)
		require.NoError(t, err)
		assert.True(t, res.TookOver)
		assertRunning(t, first, res.Execution) // the original execution, created at t0

		rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		assert.Equal(t, first.ExecutionID, rec.ExecutionID)
		assert.Equal(t, retry.LeaseToken, rec.LeaseToken)
		assertTime(t, retry.LeaseUntil, rec.LeaseUntil, "LeaseUntil")
		_, err = h.s.GetExecution(h.ctx, retry.ExecutionID)
		require.ErrorIs(t, err, storage.ErrNotFound, "a takeover creates no execution")
		h.assertUsed("alice", "0.11", "1") // reserved once

		old := finishFor(first, storage.ExecutionCompleted, `{"from":"old"}`, at)
		require.ErrorIs(t, h.s.FinishExecution(h.ctx, old), storage.ErrLeaseLost)

		taker := finishFor(first, storage.ExecutionCompleted, `{"from":"new"}`, at.Add(time.Second))
		taker.LeaseToken = retry.LeaseToken
		require.NoError(t, h.s.FinishExecution(h.ctx, taker))

		e, err := h.s.GetExecution(h.ctx, first.ExecutionID)
		require.NoError(t, err)
		assert.Equal(t, storage.ExecutionCompleted, e.Status)
		assert.Equal(t, []byte(`{"from":"new"}`), e.Response)
		h.assertUsed("alice", "0.11", "1") // charged once
	})

	t.Run("TakeoverTwice", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		first := beginFor(q, "key-1", t0)
		h.begin(first)
		second := beginFor(q, "key-1", t0.Add(2*lease))
		require.True(t, h.begin(second).TookOver)

		// The second run's lease is live, so a third must wait for it.
		early := beginFor(q, "key-1", t0.Add(2*lease+lease/2))
		_, err := h.s.BeginExecution(h.ctx, early)
		require.ErrorIs(t, err, storage.ErrIdempotencyConflict)

		third := beginFor(q, "key-1", t0.Add(4*lease))
		res := h.begin(third)
		assert.True(t, res.TookOver)
		assert.Equal(t, first.ExecutionID, res.Execution.ID)
		h.assertUsed("alice", "0.11", "1")
	})

	t.Run("QuoteUsedByAnotherKey", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		h.begin(beginFor(q, "key-1", t0))

		reuse := beginFor(q, "key-2", t0.Add(time.Second))
		_, err := h.s.BeginExecution(h.ctx, reuse)
		require.ErrorIs(t, err, storage.ErrQuoteUsed)

		h.assertKeyFree("alice", "key-2")
		got, err := h.s.GetQuote(h.ctx, q.ID)
		require.NoError(t, err)
		assert.Equal(t, "key-1", got.UsedByKey)
		h.assertUsed("alice", "0.11", "1")

		// Nothing was stored, so the caller can correct the request and
		// retry with the same key.
		corrected := beginFor(h.quote("alice", "tool-a", "0.11", t0), "key-2", t0.Add(2*time.Second))
		res := h.begin(corrected)
		assert.False(t, res.TookOver)
		h.assertUsed("alice", "0.22", "2")
	})

	t.Run("QuoteUsedBySameKeyIsNotReuse", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		first := beginFor(q, "key-1", t0)
		h.begin(first)
		h.finish(first, storage.ExecutionCompleted, `{}`, t0)
		// Once the record is pruned, the key is new again and the quote it
		// used is still its own.
		_, err := h.s.Prune(h.ctx, storage.Prune{IdempotencyBefore: t0.Add(time.Second), Limit: pruneAll})
		require.NoError(t, err)
		h.assertKeyFree("alice", "key-1")

		res := h.begin(beginFor(q, "key-1", t0.Add(2*time.Second)))
		assert.False(t, res.TookOver)
	})

	t.Run("QuoteNotFound", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name  string
			quote func(h *harness) uuid.UUID
		}{
			{name: "no such quote", quote: func(*harness) uuid.UUID { return uuid.New() }},
			{name: "another principal's quote", quote: func(h *harness) uuid.UUID {
				return h.quote("bob", "tool-a", "0.11", t0).ID
			}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				b := beginFor(newQuote("alice", "tool-a", "0.11", t0), "key-1", t0)
				b.QuoteID = tc.quote(h)

				_, err := h.s.BeginExecution(h.ctx, b)
				require.ErrorIs(t, err, storage.ErrQuoteNotFound)

				h.assertKeyFree("alice", "key-1")
				h.assertUsed("alice", "0", "0")
				if q, err := h.s.GetQuote(h.ctx, b.QuoteID); err == nil {
					assert.Equal(t, storage.QuoteOpen, q.State, "another principal's quote must stay open")
				}
			})
		}
	})

	t.Run("LimitErrorListsEveryFailure", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// Two charged calls on tool-a and one on tool-b, one hour apart.
		h.call("alice", "tool-a", "1.00", "h1", storage.ExecutionCompleted, t0.Add(-3*time.Hour))
		h.call("alice", "tool-a", "1.00", "h2", storage.ExecutionCompleted, t0.Add(-2*time.Hour))
		h.call("alice", "tool-b", "0.50", "h3", storage.ExecutionCompleted, t0.Add(-1*time.Hour))

		limits := []storage.Limit{
			spendLimit("", t0.Add(-24*time.Hour), "10.00"),      // 2.50 + 1.00: passes
			spendLimit("", t0.Add(-24*time.Hour), "3.00"),       // 2.50 + 1.00: fails
			callsLimit("tool-a", t0.Add(-24*time.Hour), "2"),    // 2 + 1: fails
			callsLimit("tool-b", t0.Add(-24*time.Hour), "2"),    // 1 + 1: passes
			spendLimit("tool-a", t0.Add(-150*time.Minute), "1"), // 1.00 + 1.00: fails, oldest is h2
		}
		q := h.quote("alice", "tool-a", "1.00", t0)
		b := beginFor(q, "key-1", t0, limits...)

		_, err := h.s.BeginExecution(h.ctx, b)
		var le *storage.LimitError
		require.ErrorAs(t, err, &le)
		require.Len(t, le.Failures, 3)

		want := []struct {
			index  int
			used   string
			oldest time.Time
		}{
			{1, "2.50", t0.Add(-3 * time.Hour)},
			{2, "2", t0.Add(-3 * time.Hour)},
			{4, "1.00", t0.Add(-2 * time.Hour)},
		}
		for i, w := range want {
			f := le.Failures[i]
			assert.Equal(t, w.index, f.Index)
			assert.Equal(t, limits[w.index].ToolID, f.Limit.ToolID)
			assert.Equal(t, limits[w.index].Measure, f.Limit.Measure)
			assertDecimal(t, limits[w.index].Max.String(), f.Limit.Max, "failure %d Max", i)
			assertDecimal(t, w.used, f.Used, "failure %d Used", i)
			assertTime(t, w.oldest, f.Oldest, "failure %d Oldest", i)
		}

		h.assertKeyFree("alice", "key-1")
		h.assertQuoteOpen(q.ID)
		_, err = h.s.GetExecution(h.ctx, b.ExecutionID)
		require.ErrorIs(t, err, storage.ErrNotFound)
		h.assertUsed("alice", "2.50", "3")
	})

	t.Run("LimitFailureOnEmptyWindowHasZeroOldest", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := beginFor(h.quote("alice", "tool-a", "5.00", t0), "key-1", t0, spendLimit("", t0.Add(-time.Hour), "1.00"))

		_, err := h.s.BeginExecution(h.ctx, b)
		var le *storage.LimitError
		require.ErrorAs(t, err, &le)
		require.Len(t, le.Failures, 1)
		assertDecimal(t, "0", le.Failures[0].Used)
		assert.True(t, le.Failures[0].Oldest.IsZero(), "nothing counted, so no oldest")
	})

	t.Run("LimitBoundaries", func(t *testing.T) {
		t.Parallel()
		// The window already holds two charged calls of 1.00.
		cases := []struct {
			name   string
			limit  storage.Limit
			amount string
			admit  bool
		}{
			{"spend reaching max exactly", spendLimit("", time.Time{}, "3.00"), "1.00", true},
			{"spend one cent over max", spendLimit("", time.Time{}, "2.99"), "1.00", false},
			{"free call at a full budget", spendLimit("", time.Time{}, "2.00"), "0", true},
			{"spend fractional cents", spendLimit("", time.Time{}, "2.0001"), "0.0001", true},
			{"spend fractional cents over", spendLimit("", time.Time{}, "2.0001"), "0.0002", false},
			{"calls reaching max exactly", callsLimit("", time.Time{}, "3"), "1.00", true},
			{"calls over max", callsLimit("", time.Time{}, "2"), "0", false},
			{"calls limit of zero", callsLimit("tool-b", time.Time{}, "0"), "0", false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				h.call("alice", "tool-b", "1.00", "h1", storage.ExecutionCompleted, t0.Add(-2*time.Hour))
				h.call("alice", "tool-b", "1.00", "h2", storage.ExecutionCompleted, t0.Add(-time.Hour))
				b := beginFor(h.quote("alice", "tool-b", tc.amount, t0), "key-1", t0, tc.limit)

				_, err := h.s.BeginExecution(h.ctx, b)
				if tc.admit {
					require.NoError(t, err)
					return
				}
				var le *storage.LimitError
				require.ErrorAs(t, err, &le)
				require.Len(t, le.Failures, 1)
				assert.Equal(t, 0, le.Failures[0].Index)
			})
		}
	})

	t.Run("LimitsCountOnlyTheirOwnPrincipal", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("bob", "tool-a", "9.00", "b1", storage.ExecutionCompleted, t0.Add(-time.Hour))
		b := beginFor(h.quote("alice", "tool-a", "1.00", t0), "key-1", t0, spendLimit("", time.Time{}, "1.00"))
		h.begin(b)
	})
}

// assertRunning checks that e is the running execution b created.
func assertRunning(t *testing.T, b storage.Begin, e storage.Execution) {
	t.Helper()
	assert.Equal(t, b.ExecutionID, e.ID)
	assert.Equal(t, b.Principal, e.Principal)
	assert.Equal(t, b.ToolID, e.ToolID)
	assert.Equal(t, b.QuoteID, e.QuoteID)
	assert.Equal(t, b.Key, e.IdempotencyKey)
	assert.Equal(t, storage.ExecutionRunning, e.Status)
	assertDecimal(t, b.AmountUSD.String(), e.AmountUSD, "AmountUSD")
	assert.False(t, e.Charged)
	assert.Empty(t, e.Response)
	assertTime(t, b.Now, e.CreatedAt, "CreatedAt")
	assert.True(t, e.FinishedAt.IsZero(), "FinishedAt of a running execution")
	if len(b.Rules) == 0 {
		assert.Nil(t, e.Rules, "Rules: none reads back as nil")
	} else {
		assert.Equal(t, b.Rules, e.Rules)
	}
}
