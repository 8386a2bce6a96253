package budgettest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A failed call gives its amount back to every budget it counted in; an
// ambiguous one holds it in every budget until a person resolves it:
// failed gives it back, completed charges it.
func testSettle(t *testing.T, newStore func(*testing.T) storage.Store) {
	h := setup(t, newStore, at("2026-03-14T12:00:00Z"), []toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", MonthlyLimitUSD: usd("1"), Approvers: []string{"dana"}},
		{ID: "search", Name: "Search team", Parent: "acme", Members: []string{"alice"}, DailyLimitUSD: usd("1")},
	}, func(c *toolgate.Config) {
		c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"dana": {"alice"}}}
	})
	ctx := context.Background()
	budgets := func() (team, org string) {
		return h.used("search", toolgatetype.BudgetDaily), h.used("acme", toolgatetype.BudgetMonthly)
	}

	res, err := h.call(ctx, "alice", "flaky", "fail")
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusFailed, res.Execution.Status, "%s", res.Body)
	team, org := budgets()
	assert.Equal(t, [2]string{"0.0000", "0.0000"}, [2]string{team, org}, "a failed call gives its amount back to every budget")

	lost, err := h.call(ctx, "alice", "flaky", "lost")
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusAmbiguous, lost.Execution.Status, "%s", lost.Body)
	team, org = budgets()
	assert.Equal(t, [2]string{"1.0000", "1.0000"}, [2]string{team, org}, "an ambiguous call holds its amount in every budget")
	q := h.quote(ctx, "alice", "paid")
	assert.False(t, q.Controls.Approved)
	assert.Equal(t, "1.0000", q.Controls.Budgets[0].Windows[toolgatetype.BudgetDaily].UsedUSD, "the quote counts what is held")
	h.refused(ctx, "alice", "paid")
	spend, err := h.gw.BudgetSpend(ctx, "dana", "acme", toolgatetype.SpendFilter{})
	require.NoError(t, err)
	assert.Equal(t, "0.0000", spend.TotalUSD, "held is not charged")

	_, err = h.gw.ResolveExecution(ctx, "dana", lost.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed})
	require.NoError(t, err)
	team, org = budgets()
	assert.Equal(t, [2]string{"0.0000", "0.0000"}, [2]string{team, org}, "resolved failed: given back to every budget")

	lost, err = h.call(ctx, "alice", "flaky", "lost")
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusAmbiguous, lost.Execution.Status)
	_, err = h.gw.ResolveExecution(ctx, "dana", lost.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusCompleted})
	require.NoError(t, err)
	team, org = budgets()
	assert.Equal(t, [2]string{"1.0000", "1.0000"}, [2]string{team, org}, "resolved completed: charged to every budget")
	for _, id := range []string{"acme", "search"} {
		spend, err = h.gw.BudgetSpend(ctx, "dana", id, toolgatetype.SpendFilter{})
		require.NoError(t, err)
		assert.Equal(t, "1.0000", spend.TotalUSD, "%s's spend once resolved completed", id)
	}
	h.refused(ctx, "alice", "paid")
}
