package budgettest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A budget's members are named principals and every token caller whose
// claim holds its value; both count in one budget, and a caller in
// neither does not.
func testMembers(t *testing.T, newStore func(*testing.T) storage.Store) {
	h := setup(t, newStore, at("2026-03-14T12:00:00Z"), []toolgatetype.BudgetDefinition{{
		ID: "search", Name: "Search team", Members: []string{"alice"},
		Claims: map[string]string{"groups": "search"}, DailyLimitUSD: usd("2"),
	}})
	bg := context.Background()
	h.mustCall(bg, "alice", "paid")
	h.mustCall(claims("ops", "search"), "carol", "paid") // an array claim holding it
	assert.Equal(t, "2.0000", h.used("search", toolgatetype.BudgetDaily), "a member's call and a claimed caller's both count")

	for _, who := range []struct {
		name string
		ctx  context.Context
	}{{"alice", bg}, {"carol", claims("search")}} {
		e := h.refused(who.ctx, who.name, "paid")
		assert.Equal(t, []string{"Call would exceed the Search team budget's daily limit of $2.0000"}, e.Violations, who.name)
		require.NotNil(t, e.Budget, who.name)
		assert.Equal(t, "search", e.Budget.ID)
	}

	// Not in the budget: carol with an API key (no claims), with a claim
	// of another case, and dave with none.
	h.mustCall(bg, "carol", "paid")
	h.mustCall(claims("Search"), "carol", "paid")
	h.mustCall(claims("ads"), "dave", "paid")
	assert.Equal(t, "2.0000", h.used("search", toolgatetype.BudgetDaily), "calls outside the budget do not count in it")

	// The refusal and the quote say the same through CallTool.
	out := h.gw.CallTool(claims("search"), "carol", toolgatetype.ToolCallRequest{Tool: "paid", Input: []byte(`{"v":"x"}`), IdempotencyKey: "calltool-1"})
	require.NotNil(t, out.Refusal, "CallTool of a claimed caller over the budget: %+v", out)
	assert.Equal(t, toolgatetype.CodeSpendLimitExceeded, out.Refusal.Code)
	require.NotNil(t, out.Refusal.Budget)
	assert.Equal(t, "search", out.Refusal.Budget.ID)
}

// A budget of everyone counts every principal, API keys and tokens alike:
// a token whose groups match no team, and a key in no budget, are held to
// the organization's ceiling, which comes after a member's team.
func testEveryone(t *testing.T, newStore func(*testing.T) storage.Store) {
	h := setup(t, newStore, at("2026-03-14T12:00:00Z"), []toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", Everyone: true, DailyLimitUSD: usd("3")},
		{ID: "search", Name: "Search team", Parent: "acme", Claims: map[string]string{"groups": "search"}, DailyLimitUSD: usd("2")},
	})
	bg := context.Background()
	h.mustCall(claims("nobody-s-team"), "carol", "paid") // a token whose groups match no team
	h.mustCall(bg, "dave", "paid")                       // an API key in no budget
	h.mustCall(claims("search"), "erin", "paid")         // a team member
	assert.Equal(t, "3.0000", h.used("acme", toolgatetype.BudgetDaily), "every caller counts in it")
	assert.Equal(t, "1.0000", h.used("search", toolgatetype.BudgetDaily))

	for _, who := range []struct {
		name string
		ctx  context.Context
	}{{"carol", claims("nobody-s-team")}, {"dave", bg}, {"frank", claims()}, {"erin", claims("search")}} {
		e := h.refused(who.ctx, who.name, "paid")
		assert.Equal(t, []string{"Call would exceed the Acme budget's daily limit of $3.0000"}, e.Violations, who.name)
		require.NotNil(t, e.Budget, who.name)
		assert.Equal(t, "acme", e.Budget.ID, who.name)
	}

	q, err := h.gw.Quote(claims("search"), "erin", "paid")
	require.NoError(t, err)
	var ids []string
	for _, b := range q.Controls.Budgets {
		ids = append(ids, b.ID)
	}
	assert.Equal(t, []string{"search", "acme"}, ids, "the team first, then everyone's")
}
