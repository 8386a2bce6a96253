package budgettest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A call counts in the caller's team and in the organization above it:
// the team refuses while the organization has room, and the organization
// refuses while the team has room. The quote shows both, nearest first,
// and the refusal names the budget that is short.
func testNested(t *testing.T, newStore func(*testing.T) storage.Store) {
	h := setup(t, newStore, at("2026-03-14T12:00:00Z"), []toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", MonthlyLimitUSD: usd("3")},
		{ID: "search", Name: "Search team", Parent: "acme", Members: []string{"alice"}, DailyLimitUSD: usd("2")},
		{ID: "ads", Name: "Ads team", Parent: "acme", Members: []string{"bob"}, DailyLimitUSD: usd("5")},
	})
	ctx := context.Background()
	h.mustCall(ctx, "alice", "paid")
	h.mustCall(ctx, "alice", "paid")

	q := h.quote(ctx, "alice", "paid")
	assert.False(t, q.Controls.Approved)
	assert.Equal(t, []string{"Call would exceed the Search team budget's daily limit of $2.0000"}, q.Controls.Violations)
	require.Len(t, q.Controls.Budgets, 2)
	team, org := q.Controls.Budgets[0], q.Controls.Budgets[1]
	assert.Equal(t, "search", team.ID)
	assert.Equal(t, "Search team", team.Name)
	require.NotNil(t, team.Parent)
	assert.Equal(t, "acme", *team.Parent)
	assert.Equal(t, toolgatetype.BudgetWindow{LimitUSD: "2.0000", UsedUSD: "2.0000", RemainingUSD: "0.0000",
		ResetsAt: at("2026-03-15T00:00:00Z")}, team.Windows[toolgatetype.BudgetDaily])
	assert.Len(t, team.Windows, 1, "only the windows with a limit")
	assert.Equal(t, "acme", org.ID)
	assert.Nil(t, org.Parent)
	assert.Equal(t, toolgatetype.BudgetWindow{LimitUSD: "3.0000", UsedUSD: "2.0000", RemainingUSD: "1.0000",
		ResetsAt: at("2026-04-01T00:00:00Z")}, org.Windows[toolgatetype.BudgetMonthly])

	e := h.refused(ctx, "alice", "paid")
	assert.Equal(t, &toolgatetype.BudgetRefusal{ID: "search", Window: toolgatetype.BudgetDaily, LimitUSD: "2.0000",
		UsedUSD: "2.0000", RequestedUSD: "1.0000", ResetsAt: at("2026-03-15T00:00:00Z")}, e.Budget,
		"the team is short while the organization has room")

	h.mustCall(ctx, "bob", "paid")
	e = h.refused(ctx, "bob", "paid")
	assert.Equal(t, []string{"Call would exceed the Acme budget's monthly limit of $3.0000"}, e.Violations)
	assert.Equal(t, &toolgatetype.BudgetRefusal{ID: "acme", Window: toolgatetype.BudgetMonthly, LimitUSD: "3.0000",
		UsedUSD: "3.0000", RequestedUSD: "1.0000", ResetsAt: at("2026-04-01T00:00:00Z")}, e.Budget,
		"the organization is short while the team has room")
	assert.Equal(t, "1.0000", h.used("ads", toolgatetype.BudgetDaily))

	// Someone in no budget is not held back by the organization's.
	h.mustCall(ctx, "zoe", "paid")
	assert.Equal(t, "3.0000", h.used("acme", toolgatetype.BudgetMonthly))
}
