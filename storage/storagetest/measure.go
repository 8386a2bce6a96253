package storagetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

func testMeasure(t *testing.T, newStore newStoreFunc) {
	t.Run("CountsWhatEachLimitLooksAt", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// alice's history, oldest first:
		//   40 days ago  tool-a 4.00 completed (last month)
		//   2 hours ago  tool-a 1.00 completed
		//   1 hour ago   tool-a 2.00 failed, released
		//   30 min ago   tool-a 0.50 still running, reserved
		//   10 min ago   tool-b 0.25 completed
		// and bob's 7.00 on tool-a, which never counts for alice.
		h.call("alice", "tool-a", "4.00", "k0", storage.ExecutionCompleted, t0.Add(-40*24*time.Hour))
		h.call("alice", "tool-a", "1.00", "k1", storage.ExecutionCompleted, t0.Add(-2*time.Hour))
		h.call("alice", "tool-a", "2.00", "k2", storage.ExecutionFailed, t0.Add(-time.Hour))
		h.admit("alice", "tool-a", "0.50", "k3", t0.Add(-30*time.Minute))
		h.call("alice", "tool-b", "0.25", "k4", storage.ExecutionCompleted, t0.Add(-10*time.Minute))
		h.call("bob", "tool-a", "7.00", "k5", storage.ExecutionCompleted, t0)

		day := t0.Truncate(24 * time.Hour)
		cases := []struct {
			name  string
			limit storage.Limit
			want  string
		}{
			{"spend all time", spendLimit("", time.Time{}, "0"), "5.75"},
			{"spend today", spendLimit("", day, "0"), "1.75"},
			{"spend today on tool-a", spendLimit("tool-a", day, "0"), "1.50"},
			{"spend today on tool-b", spendLimit("tool-b", day, "0"), "0.25"},
			{"spend on an unused tool", spendLimit("tool-c", day, "0"), "0"},
			{"spend since the running call, inclusive", spendLimit("", t0.Add(-30*time.Minute), "0"), "0.75"},
			{"spend since just after it", spendLimit("", t0.Add(-30*time.Minute+time.Second), "0"), "0.25"},
			{"spend in the last 90 minutes, released excluded", spendLimit("", t0.Add(-90*time.Minute), "0"), "0.75"},
			{"spend in the future", spendLimit("", t0.Add(time.Hour), "0"), "0"},
			{"calls all time", callsLimit("", time.Time{}, "0"), "5"},
			{"calls today, failed included", callsLimit("", day, "0"), "4"},
			{"calls in the last hour on tool-a", callsLimit("tool-a", t0.Add(-time.Hour), "0"), "2"},
			{"calls in the last 90 minutes, released included", callsLimit("", t0.Add(-90*time.Minute), "0"), "3"},
			{"calls on tool-b", callsLimit("tool-b", time.Time{}, "0"), "1"},
		}
		limits := make([]storage.Limit, len(cases))
		for i, tc := range cases {
			limits[i] = tc.limit
		}
		// One call with every limit, so order is checked along with values.
		got, err := h.s.MeasureLimits(h.ctx, "alice", limits)
		require.NoError(t, err)
		require.Len(t, got, len(cases))
		for i, tc := range cases {
			assertDecimal(t, tc.want, got[i], tc.name)
		}
	})

	t.Run("EmptyLimits", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("alice", "tool-a", "1.00", "k1", storage.ExecutionCompleted, t0)
		got, err := h.s.MeasureLimits(h.ctx, "alice", nil)
		require.NoError(t, err)
		assert.Empty(t, got)
	})

	t.Run("UnknownPrincipalIsZero", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("alice", "tool-a", "1.00", "k1", storage.ExecutionCompleted, t0)
		h.assertUsed("nobody", "0", "0")
	})
}
