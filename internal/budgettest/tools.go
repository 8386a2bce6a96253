package budgettest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A budget's limits on one tool: a tool it blocks is refused to every
// member before anything is reserved, and a tool's own limit refuses that
// tool while the others still run.
func testTools(t *testing.T, newStore func(*testing.T) storage.Store) {
	h := setup(t, newStore, at("2026-03-14T12:00:00Z"), []toolgatetype.BudgetDefinition{{
		ID: "search", Name: "Search team", Members: []string{"alice"}, DailyLimitUSD: usd("10"),
		Tools: map[string]toolgatetype.BudgetToolLimits{
			"paid":  {DailyLimitUSD: usd("1")},
			"flaky": {Allowed: registry.Bool(false)},
		},
	}})
	ctx := context.Background()

	q := h.quote(ctx, "alice", "flaky")
	assert.False(t, q.Controls.Approved)
	assert.Equal(t, []string{"This tool is blocked by the Search team budget"}, q.Controls.Violations)
	e := h.refused(ctx, "alice", "flaky")
	assert.Equal(t, []string{"This tool is blocked by the Search team budget"}, e.Violations)
	assert.Equal(t, "0.0000", h.used("search", toolgatetype.BudgetDaily), "nothing reserved for a blocked tool")
	h.mustCall(ctx, "bob", "flaky") // not a member

	h.mustCall(ctx, "alice", "paid")
	q = h.quote(ctx, "alice", "paid")
	assert.Equal(t, []string{"Call would exceed the Search team budget's daily limit for this tool of $1.0000"}, q.Controls.Violations)
	e = h.refused(ctx, "alice", "paid")
	assert.Equal(t, []string{"Call would exceed the Search team budget's daily limit for this tool of $1.0000"}, e.Violations)
	require.NotNil(t, e.Budget)
	assert.Equal(t, toolgatetype.BudgetRefusal{ID: "search", Window: toolgatetype.BudgetDaily, Tool: "paid", LimitUSD: "1.0000",
		UsedUSD: "1.0000", RequestedUSD: "1.0000", ResetsAt: at("2026-03-15T00:00:00Z")}, *e.Budget)
	h.mustCall(ctx, "alice", "other")
	assert.Equal(t, "2.0000", h.used("search", toolgatetype.BudgetDaily))
}
