package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

func testPrune(t *testing.T, newStore newStoreFunc) {
	t.Run("NothingOldNothingPruned", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("alice", "tool-a", "0.11", "k1", storage.ExecutionCompleted, t0)
		h.quote("alice", "tool-a", "0.11", t0)

		res, err := h.s.Prune(h.ctx, storage.Prune{Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, storage.PruneResult{}, res)
		h.assertUsed("alice", "0.11", "1")
	})

	t.Run("OldFinishedRecordsGoWithTheirExecutions", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		old := h.call("alice", "tool-a", "1.00", "old", storage.ExecutionCompleted, t0.Add(-48*time.Hour))
		oldFailed := h.call("alice", "tool-a", "2.00", "old-failed", storage.ExecutionFailed, t0.Add(-47*time.Hour))
		recent := h.call("alice", "tool-a", "0.50", "recent", storage.ExecutionCompleted, t0.Add(-time.Hour))

		res, err := h.s.Prune(h.ctx, storage.Prune{IdempotencyBefore: t0.Add(-24 * time.Hour), Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, storage.PruneResult{Idempotency: 2}, res)

		for _, b := range []storage.Begin{old, oldFailed} {
			h.assertKeyFree("alice", b.Key)
			_, err = h.s.GetExecution(h.ctx, b.ExecutionID)
			assert.ErrorIs(t, err, storage.ErrNotFound, b.Key)
		}
		_, err = h.s.GetIdempotency(h.ctx, "alice", "recent")
		require.NoError(t, err)
		_, err = h.s.GetExecution(h.ctx, recent.ExecutionID)
		require.NoError(t, err)

		// The ledger is separate: the month's spend and calls are intact.
		h.assertUsed("alice", "1.50", "3")
	})

	t.Run("RunningRecordsGoOnlyOnceTheirLeaseEnded", func(t *testing.T) {
		t.Parallel()
		cutoff := t0.Add(-24 * time.Hour)
		created := t0.Add(-48 * time.Hour)
		cases := []struct {
			name       string
			leaseUntil time.Time
			pruned     bool
		}{
			{"abandoned, lease ended before the cutoff", created.Add(lease), true},
			{"lease ended after the cutoff", t0.Add(-12 * time.Hour), false},
			{"lease ends exactly at the cutoff", cutoff, false},
			{"lease still live", t0.Add(time.Hour), false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				b := beginFor(h.quote("alice", "tool-a", "0.11", created), "key-1", created)
				b.LeaseUntil = tc.leaseUntil
				h.begin(b)

				res, err := h.s.Prune(h.ctx, storage.Prune{IdempotencyBefore: cutoff, Limit: pruneAll})
				require.NoError(t, err)

				_, getErr := h.s.GetExecution(h.ctx, b.ExecutionID)
				if tc.pruned {
					assert.Equal(t, 1, res.Idempotency)
					assert.ErrorIs(t, getErr, storage.ErrNotFound)
					h.assertKeyFree("alice", "key-1")
					return
				}
				assert.Equal(t, 0, res.Idempotency)
				require.NoError(t, getErr)
				h.finish(b, storage.ExecutionCompleted, `{}`, t0) // the run can still report
			})
		}
	})

	t.Run("ExpiredQuotes", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		expired := h.quote("alice", "tool-a", "0.11", t0.Add(-time.Hour))
		usedExpired := h.quote("alice", "tool-a", "0.11", t0.Add(-30*time.Minute))
		atCutoff := h.quote("alice", "tool-a", "0.11", t0.Add(-5*time.Minute)) // expires exactly at t0
		open := h.quote("alice", "tool-a", "0.11", t0)
		b := beginFor(usedExpired, "k1", usedExpired.CreatedAt)
		h.begin(b)
		h.finish(b, storage.ExecutionCompleted, `{}`, b.Now)

		res, err := h.s.Prune(h.ctx, storage.Prune{QuotesBefore: t0, Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, storage.PruneResult{Quotes: 2}, res)

		for _, q := range []storage.Quote{expired, usedExpired} {
			_, err := h.s.GetQuote(h.ctx, q.ID)
			assert.ErrorIs(t, err, storage.ErrNotFound)
		}
		for _, q := range []storage.Quote{atCutoff, open} {
			_, err := h.s.GetQuote(h.ctx, q.ID)
			assert.NoError(t, err)
		}
	})

	t.Run("OldLedger", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("alice", "tool-a", "4.00", "k0", storage.ExecutionCompleted, t0.Add(-40*24*time.Hour))
		h.call("alice", "tool-a", "3.00", "k1", storage.ExecutionFailed, t0.Add(-39*24*time.Hour))
		h.call("bob", "tool-a", "2.00", "k2", storage.ExecutionCompleted, t0.Add(-38*24*time.Hour))
		h.call("alice", "tool-a", "1.00", "k3", storage.ExecutionCompleted, t0.Add(-time.Hour))
		monthStart := time.Date(t0.Year(), t0.Month(), 1, 0, 0, 0, 0, time.UTC)

		res, err := h.s.Prune(h.ctx, storage.Prune{LedgerBefore: monthStart, Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, storage.PruneResult{Ledger: 3}, res)
		h.assertUsed("alice", "1.00", "1")
		h.assertUsed("bob", "0", "0")
	})

	t.Run("LedgerPruneDoesNotBreakARunningCall", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// A long call began last month and is still running when last
		// month's ledger is pruned: it must still finish, and count in no
		// window of this month.
		began := t0.AddDate(0, -1, 0)
		b := beginFor(h.quote("alice", "tool-a", "0.11", began), "k1", began)
		b.LeaseUntil = t0.Add(time.Hour)
		h.begin(b)
		monthStart := time.Date(t0.Year(), t0.Month(), 1, 0, 0, 0, 0, time.UTC)

		_, err := h.s.Prune(h.ctx, storage.Prune{LedgerBefore: monthStart, Limit: pruneAll})
		require.NoError(t, err)
		h.finish(b, storage.ExecutionCompleted, `{}`, t0)

		e, err := h.s.GetExecution(h.ctx, b.ExecutionID)
		require.NoError(t, err)
		assert.Equal(t, storage.ExecutionCompleted, e.Status)
		assertDecimal(t, "0", h.used("alice", spendLimit("", monthStart, "0")))
	})

	t.Run("HonoursLimit", func(t *testing.T) {
		t.Parallel()
		const n = 5
		cases := []struct {
			name  string
			prune storage.Prune
			count func(storage.PruneResult) int
		}{
			{"idempotency", storage.Prune{IdempotencyBefore: t0, Limit: 2}, func(r storage.PruneResult) int { return r.Idempotency }},
			{"quotes", storage.Prune{QuotesBefore: t0, Limit: 2}, func(r storage.PruneResult) int { return r.Quotes }},
			{"ledger", storage.Prune{LedgerBefore: t0, Limit: 2}, func(r storage.PruneResult) int { return r.Ledger }},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				for i := range n {
					h.call("alice", "tool-a", "0.11", fmt.Sprint("k", i), storage.ExecutionCompleted, t0.Add(-time.Duration(24+i)*time.Hour))
				}
				var got []int
				for range 4 {
					res, err := h.s.Prune(h.ctx, tc.prune)
					require.NoError(t, err)
					got = append(got, tc.count(res))
				}
				assert.Equal(t, []int{2, 2, 1, 0}, got)
			})
		}
	})

	t.Run("ZeroLimitMeansAThousand", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		for i := range 1001 {
			h.quote("alice", "tool-a", "0.11", t0.Add(-time.Hour-time.Duration(i)*time.Second))
		}
		res, err := h.s.Prune(h.ctx, storage.Prune{QuotesBefore: t0, Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, 1000, res.Quotes)
		res, err = h.s.Prune(h.ctx, storage.Prune{QuotesBefore: t0, Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, 1, res.Quotes)
	})
}
