package storagetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

func testUsage(t *testing.T, newStore newStoreFunc) {
	t.Run("CountsCompletedCallsAndUniquePrincipals", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
		h.call("alice", "tool-a", "0.11", "a1", storage.ExecutionCompleted, at(0))
		h.call("alice", "tool-a", "0.11", "a2", storage.ExecutionCompleted, at(1)) // same user again
		h.call("bob", "tool-a", "0.11", "b1", storage.ExecutionCompleted, at(2))
		h.call("carol", "tool-a", "0.11", "c1", storage.ExecutionFailed, at(3)) // not a use
		h.call("carol", "tool-b", "0", "c2", storage.ExecutionCompleted, at(4))
		h.call("dave", "tool-c", "0.11", "d1", storage.ExecutionFailed, at(5))
		h.admit("erin", "tool-d", "0.11", "e1", at(6)) // still running

		cases := []struct {
			toolID string
			want   storage.Usage
		}{
			{"tool-a", storage.Usage{Count: 3, UniqueUsers: 2}},
			{"tool-b", storage.Usage{Count: 1, UniqueUsers: 1}},
			{"tool-c", storage.Usage{}},
			{"tool-d", storage.Usage{}},
			{"never-called", storage.Usage{}},
		}
		for _, tc := range cases {
			got, err := h.s.Usage(h.ctx, tc.toolID)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, tc.toolID)
		}

		all, err := h.s.UsageAll(h.ctx)
		require.NoError(t, err)
		assert.Equal(t, map[string]storage.Usage{
			"tool-a": {Count: 3, UniqueUsers: 2},
			"tool-b": {Count: 1, UniqueUsers: 1},
		}, all)
	})

	t.Run("UsageOfListsOnlyTheToolsAsked", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("alice", "tool-a", "0.11", "a1", storage.ExecutionCompleted, t0)
		h.call("bob", "tool-a", "0.11", "b1", storage.ExecutionCompleted, t0.Add(time.Minute))
		h.call("bob", "tool-b", "0", "b2", storage.ExecutionCompleted, t0.Add(2*time.Minute))
		h.call("carol", "tool-c", "0.11", "c1", storage.ExecutionFailed, t0.Add(3*time.Minute))
		want := map[string]storage.Usage{"tool-a": {Count: 2, UniqueUsers: 2}}
		asked := []string{"tool-a", "tool-c", "never-called"}

		got, err := h.s.UsageOf(h.ctx, asked)
		require.NoError(t, err)
		assert.Equal(t, want, got)
		got, err = h.s.UsageOf(h.ctx, nil)
		require.NoError(t, err)
		assert.Empty(t, got)
	})

	t.Run("UsageAllOnEmptyStore", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		all, err := h.s.UsageAll(h.ctx)
		require.NoError(t, err)
		assert.Empty(t, all)
	})

	t.Run("SurvivesPruning", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("alice", "tool-a", "0.11", "a1", storage.ExecutionCompleted, t0.Add(-48*time.Hour))
		_, err := h.s.Prune(h.ctx, storage.Prune{
			IdempotencyBefore: t0,
			QuotesBefore:      t0,
			LedgerBefore:      t0,
			Limit:             pruneAll,
		})
		require.NoError(t, err)
		h.call("alice", "tool-a", "0.11", "a2", storage.ExecutionCompleted, t0)

		got, err := h.s.Usage(h.ctx, "tool-a")
		require.NoError(t, err)
		assert.Equal(t, storage.Usage{Count: 2, UniqueUsers: 1}, got, "a pruned call still counted, and its principal is still known")
	})
}
