package storagetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

func approval(principal, toolID, digest string, mode toolgatetype.StandingMode) storage.Approval {
	return storage.Approval{
		Principal:      principal,
		ToolID:         toolID,
		ManifestDigest: digest,
		Mode:           mode,
		UpdatedAt:      t0,
	}
}

func testApproval(t *testing.T, newStore newStoreFunc) {
	t.Run("PutGetReplace", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		first := approval("alice", "tool-a", "sha256:v1", toolgatetype.ApprovalFirstUse)
		require.NoError(t, h.s.PutApproval(h.ctx, first))
		got, err := h.s.GetApproval(h.ctx, "alice", "tool-a")
		require.NoError(t, err)
		assertApproval(t, first, got)

		second := approval("alice", "tool-a", "sha256:v2", toolgatetype.ApprovalNeverAsk)
		second.UpdatedAt = t0.Add(time.Hour)
		require.NoError(t, h.s.PutApproval(h.ctx, second))
		got, err = h.s.GetApproval(h.ctx, "alice", "tool-a")
		require.NoError(t, err)
		assertApproval(t, second, got)

		list, err := h.s.ListApprovals(h.ctx, "alice")
		require.NoError(t, err)
		require.Len(t, list, 1, "a put replaces, never adds")
	})

	t.Run("ApprovedByRoundTrips", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		byApprover := approval("alice", "tool-a", "sha256:v1", toolgatetype.ApprovalNeverAsk)
		byApprover.ApprovedBy = "pat"
		require.NoError(t, h.s.PutApproval(h.ctx, byApprover))
		got, err := h.s.GetApproval(h.ctx, "alice", "tool-a")
		require.NoError(t, err)
		assertApproval(t, byApprover, got)

		// The caller replacing it leaves no approver's name on it.
		byCaller := approval("alice", "tool-a", "sha256:v1", toolgatetype.ApprovalNeverAsk)
		require.NoError(t, h.s.PutApproval(h.ctx, byCaller))
		list, err := h.s.ListApprovals(h.ctx, "alice")
		require.NoError(t, err)
		require.Len(t, list, 1)
		assertApproval(t, byCaller, list[0])
	})

	t.Run("GetMissingIsNotFound", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		require.NoError(t, h.s.PutApproval(h.ctx, approval("alice", "tool-a", "d", toolgatetype.ApprovalNeverAsk)))
		cases := []struct{ principal, toolID string }{
			{"alice", "tool-b"},
			{"bob", "tool-a"}, // approvals are per principal
		}
		for _, tc := range cases {
			_, err := h.s.GetApproval(h.ctx, tc.principal, tc.toolID)
			assert.ErrorIs(t, err, storage.ErrNotFound, "%s/%s", tc.principal, tc.toolID)
		}
	})

	t.Run("ListIsOrderedByToolID", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		modes := map[string]toolgatetype.StandingMode{
			"tool-c": toolgatetype.ApprovalAskEveryCall,
			"tool-a": toolgatetype.ApprovalAskChargedCalls,
			"tool-b": toolgatetype.ApprovalNeverAsk,
		}
		for _, id := range []string{"tool-c", "tool-a", "tool-b"} {
			require.NoError(t, h.s.PutApproval(h.ctx, approval("alice", id, "sha256:"+id, modes[id])))
		}
		require.NoError(t, h.s.PutApproval(h.ctx, approval("bob", "tool-0", "d", toolgatetype.ApprovalNeverAsk)))

		list, err := h.s.ListApprovals(h.ctx, "alice")
		require.NoError(t, err)
		require.Len(t, list, 3)
		for i, id := range []string{"tool-a", "tool-b", "tool-c"} {
			assertApproval(t, approval("alice", id, "sha256:"+id, modes[id]), list[i])
		}

		none, err := h.s.ListApprovals(h.ctx, "nobody")
		require.NoError(t, err)
		assert.Empty(t, none)
	})

	t.Run("DeleteThenNotFound", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		require.NoError(t, h.s.PutApproval(h.ctx, approval("alice", "tool-a", "d", toolgatetype.ApprovalNeverAsk)))
		require.NoError(t, h.s.PutApproval(h.ctx, approval("alice", "tool-b", "d", toolgatetype.ApprovalNeverAsk)))

		require.NoError(t, h.s.DeleteApproval(h.ctx, "alice", "tool-a"))
		_, err := h.s.GetApproval(h.ctx, "alice", "tool-a")
		require.ErrorIs(t, err, storage.ErrNotFound)
		require.ErrorIs(t, h.s.DeleteApproval(h.ctx, "alice", "tool-a"), storage.ErrNotFound)

		list, err := h.s.ListApprovals(h.ctx, "alice")
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, "tool-b", list[0].ToolID)
	})

	t.Run("DeleteMissingIsNotFound", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		require.ErrorIs(t, h.s.DeleteApproval(h.ctx, "alice", "tool-a"), storage.ErrNotFound)
	})
}

func assertApproval(t *testing.T, want, got storage.Approval) {
	t.Helper()
	assert.Equal(t, want.Principal, got.Principal)
	assert.Equal(t, want.ToolID, got.ToolID)
	assert.Equal(t, want.ManifestDigest, got.ManifestDigest)
	assert.Equal(t, want.Mode, got.Mode)
	assert.Equal(t, want.ApprovedBy, got.ApprovedBy)
	assertTime(t, want.UpdatedAt, got.UpdatedAt, "UpdatedAt")
}
