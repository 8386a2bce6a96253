package storagetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

func testAmbiguousWaiting(t *testing.T, newStore newStoreFunc) {
	t.Run("CountsTheUnresolvedOfEveryPrincipal", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		c := h.s
		assertWaiting := func(wantN int64, wantOldest time.Time, msg string) {
			t.Helper()
			n, oldest, err := c.AmbiguousWaiting(h.ctx)
			require.NoError(t, err, msg)
			assert.Equal(t, wantN, n, msg)
			if wantOldest.IsZero() {
				assert.True(t, oldest.IsZero(), "%s: no oldest, got %v", msg, oldest)
				return
			}
			assertTime(t, wantOldest, oldest, msg)
		}
		assertWaiting(0, time.Time{}, "an empty store")

		// Calls that ended, or have not, are not waiting for anyone.
		h.call("alice", "tool-a", "0.1000", "done", storage.ExecutionCompleted, t0.Add(-3*time.Hour))
		h.call("alice", "tool-a", "0.1000", "broke", storage.ExecutionFailed, t0.Add(-3*time.Hour))
		h.admit("carol", "tool-a", "0.1000", "running", t0.Add(-3*time.Hour))
		assertWaiting(0, time.Time{}, "completed, failed and running calls")

		older := h.ambiguous("alice", "tool-a", "0.1000", "lost-1", t0.Add(-2*time.Hour))
		newer := h.ambiguous("bob", "tool-b", "0.2000", "lost-2", t0.Add(-time.Hour))
		assertWaiting(2, t0.Add(-2*time.Hour), "two principals' ambiguous calls")

		// Retention keeps what waits, however old.
		_, err := h.s.Prune(h.ctx, storage.Prune{IdempotencyBefore: t0.Add(48 * time.Hour), LedgerBefore: t0.Add(48 * time.Hour), Limit: pruneAll})
		require.NoError(t, err)
		assertWaiting(2, t0.Add(-2*time.Hour), "after a prune past both")

		h.resolve(resolveFor(older.ExecutionID, storage.ExecutionCompleted, "ops", t0))
		assertWaiting(1, t0.Add(-time.Hour), "the older resolved")

		h.resolve(resolveFor(newer.ExecutionID, storage.ExecutionFailed, "ops", t0))
		assertWaiting(0, time.Time{}, "both resolved")
	})
}
