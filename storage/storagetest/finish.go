package storagetest

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

func testFinish(t *testing.T, newStore newStoreFunc) {
	t.Run("Outcome", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name   string
			status storage.ExecutionStatus
			spend  string // all-time spend afterwards
			count  int64  // the tool's usage count afterwards
		}{
			{"completed is charged and counted", storage.ExecutionCompleted, "0.11", 1},
			{"failed is released and not counted", storage.ExecutionFailed, "0", 0},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				b := h.admit("alice", "tool-a", "0.11", "key-1", t0)
				// Bytes a JSON round trip would change, to prove they are
				// stored verbatim.
				resp := "{\"b\": 2,  \"a\":1.10}\n"
				done := t0.Add(3 * time.Second)
				h.finish(b, tc.status, resp, done)

				e, err := h.s.GetExecution(h.ctx, b.ExecutionID)
				require.NoError(t, err)
				assert.Equal(t, tc.status, e.Status)
				assert.Equal(t, tc.status == storage.ExecutionCompleted, e.Charged)
				assert.Equal(t, []byte(resp), e.Response)
				assertTime(t, done, e.FinishedAt, "FinishedAt")
				assertTime(t, t0, e.CreatedAt, "CreatedAt")
				assertDecimal(t, "0.11", e.AmountUSD, "AmountUSD keeps the quote's amount")

				rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
				require.NoError(t, err)
				assert.True(t, rec.Finished)
				assert.Equal(t, []byte(resp), rec.Response)
				assert.Equal(t, b.ExecutionID, rec.ExecutionID)

				h.assertUsed("alice", tc.spend, "1")
				u, err := h.s.Usage(h.ctx, "tool-a")
				require.NoError(t, err)
				assert.Equal(t, tc.count, u.Count)
			})
		}
	})

	t.Run("ChargedFlagDecidesTheLedger", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// A completed call the gateway chose not to charge is still a
		// completed call for usage, but not spend.
		b := h.admit("alice", "tool-a", "0.11", "key-1", t0)
		f := finishFor(b, storage.ExecutionCompleted, `{}`, t0)
		f.Charged = false
		require.NoError(t, h.s.FinishExecution(h.ctx, f))

		e, err := h.s.GetExecution(h.ctx, b.ExecutionID)
		require.NoError(t, err)
		assert.False(t, e.Charged)
		h.assertUsed("alice", "0", "1")
		u, err := h.s.Usage(h.ctx, "tool-a")
		require.NoError(t, err)
		assert.Equal(t, int64(1), u.Count)
	})

	t.Run("WrongLeaseTokenIsLeaseLost", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.admit("alice", "tool-a", "0.11", "key-1", t0)
		f := finishFor(b, storage.ExecutionCompleted, `{"x":1}`, t0)
		f.LeaseToken = uuid.New()
		require.ErrorIs(t, h.s.FinishExecution(h.ctx, f), storage.ErrLeaseLost)

		e, err := h.s.GetExecution(h.ctx, b.ExecutionID)
		require.NoError(t, err)
		assert.Equal(t, storage.ExecutionRunning, e.Status, "a lost run changes nothing")
		rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		assert.False(t, rec.Finished)

		h.finish(b, storage.ExecutionCompleted, `{"x":2}`, t0) // the lease holder still can
	})

	t.Run("LateFinishWithoutTakeoverSucceeds", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// The lease expired but nobody took over, so the token still holds
		// it and the result is the only one there is.
		b := h.admit("alice", "tool-a", "0.11", "key-1", t0)
		h.finish(b, storage.ExecutionCompleted, `{}`, b.LeaseUntil.Add(time.Hour))
		h.assertUsed("alice", "0.11", "1")
	})

	t.Run("SecondFinishIsLeaseLost", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.admit("alice", "tool-a", "0.11", "key-1", t0)
		h.finish(b, storage.ExecutionCompleted, `{"n":1}`, t0)

		again := finishFor(b, storage.ExecutionCompleted, `{"n":2}`, t0.Add(time.Second))
		require.ErrorIs(t, h.s.FinishExecution(h.ctx, again), storage.ErrLeaseLost)

		rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		assert.Equal(t, []byte(`{"n":1}`), rec.Response)
		h.assertUsed("alice", "0.11", "1")
		u, err := h.s.Usage(h.ctx, "tool-a")
		require.NoError(t, err)
		assert.Equal(t, storage.Usage{Count: 1, UniqueUsers: 1}, u)
	})

	t.Run("UnknownExecutionIsNotFound", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		f := finishFor(beginFor(newQuote("alice", "tool-a", "0.11", t0), "key-1", t0), storage.ExecutionCompleted, `{}`, t0)
		require.ErrorIs(t, h.s.FinishExecution(h.ctx, f), storage.ErrNotFound)
	})

	t.Run("GetMissingExecutionIsNotFound", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		_, err := h.s.GetExecution(h.ctx, uuid.New())
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = h.s.GetIdempotency(h.ctx, "alice", "no-such-key")
		require.ErrorIs(t, err, storage.ErrNotFound)
	})
}
