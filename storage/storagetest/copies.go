package storagetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// testCopies checks that nothing a caller holds aliases the store: a
// response replayed byte for byte must not change because some handler
// reused a buffer.
func testCopies(t *testing.T, newStore newStoreFunc) {
	t.Run("ResponseBytes", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.admit("alice", "tool-a", "0.11", "key-1", t0)
		buf := []byte(`{"ok":true}`)
		f := finishFor(b, storage.ExecutionCompleted, "", t0)
		f.Response = buf
		require.NoError(t, h.s.FinishExecution(h.ctx, f))
		buf[0] = 'X' // the caller reuses its buffer

		e, err := h.s.GetExecution(h.ctx, b.ExecutionID)
		require.NoError(t, err)
		require.Equal(t, []byte(`{"ok":true}`), e.Response)
		e.Response[0] = 'Y'

		rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		require.Equal(t, []byte(`{"ok":true}`), rec.Response)
		rec.Response[0] = 'Z'

		e, err = h.s.GetExecution(h.ctx, b.ExecutionID)
		require.NoError(t, err)
		assert.Equal(t, []byte(`{"ok":true}`), e.Response)
		rec, err = h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		assert.Equal(t, []byte(`{"ok":true}`), rec.Response)
	})

	t.Run("SpendControls", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		in := toolgatetype.SpendControls{
			DailyLimitUSD:      decPtr("5"),
			RateLimitPerMinute: intPtr(10),
			Tools:              map[string]toolgatetype.ToolSpendControls{"goal-data": {Allowed: boolPtr(true)}},
		}
		require.NoError(t, h.s.PutSpendControls(h.ctx, "alice", in))
		*in.DailyLimitUSD = dec("500")
		*in.RateLimitPerMinute = 1000
		*in.Tools["goal-data"].Allowed = false
		in.Tools["weather"] = toolgatetype.ToolSpendControls{}

		out, err := h.s.GetSpendControls(h.ctx, "alice")
		require.NoError(t, err)
		*out.DailyLimitUSD = dec("600")
		*out.RateLimitPerMinute = 2000
		*out.Tools["goal-data"].Allowed = false
		out.Tools["news"] = toolgatetype.ToolSpendControls{}

		got, err := h.s.GetSpendControls(h.ctx, "alice")
		require.NoError(t, err)
		assertControls(t, toolgatetype.SpendControls{
			DailyLimitUSD:      decPtr("5"),
			RateLimitPerMinute: intPtr(10),
			Tools:              map[string]toolgatetype.ToolSpendControls{"goal-data": {Allowed: boolPtr(true)}},
		}, got)
	})

	t.Run("Approvals", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		want := approval("alice", "tool-a", "sha256:v1", toolgatetype.ApprovalNeverAsk)
		require.NoError(t, h.s.PutApproval(h.ctx, want))

		list, err := h.s.ListApprovals(h.ctx, "alice")
		require.NoError(t, err)
		require.Len(t, list, 1)
		list[0].ManifestDigest = "sha256:forged"

		got, err := h.s.GetApproval(h.ctx, "alice", "tool-a")
		require.NoError(t, err)
		assertApproval(t, want, got)
	})

	t.Run("UsageAll", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("alice", "tool-a", "0.11", "k1", storage.ExecutionCompleted, t0)
		all, err := h.s.UsageAll(h.ctx)
		require.NoError(t, err)
		all["tool-a"] = storage.Usage{Count: 1000}
		all["tool-z"] = storage.Usage{Count: 1}

		all, err = h.s.UsageAll(h.ctx)
		require.NoError(t, err)
		assert.Equal(t, map[string]storage.Usage{"tool-a": {Count: 1, UniqueUsers: 1}}, all)
	})

	t.Run("LimitsAndMeasures", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("alice", "tool-a", "1.00", "k1", storage.ExecutionCompleted, t0)
		limits := []storage.Limit{spendLimit("", t0, "10")}
		used, err := h.s.MeasureLimits(h.ctx, "alice", limits)
		require.NoError(t, err)
		used[0] = dec("99")
		limits[0].ToolID = "tool-z"

		h.assertUsed("alice", "1.00", "1")
	})
}
