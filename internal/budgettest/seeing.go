package budgettest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// An approver sees the budgets that name them and their descendants, and
// their spend: charged amounts only, a parent's including its teams', by
// day of the budget's time zone, principal or tool. A budget they may not
// see is as absent as an unknown one.
func testSeeing(t *testing.T, newStore func(*testing.T) storage.Store) {
	// 22:30 UTC is 23:30 in Berlin: the next call falls on the next
	// Berlin day while UTC's is the same.
	h := setup(t, newStore, at("2026-03-14T22:30:00Z"), []toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", MonthlyLimitUSD: usd("100"), Approvers: []string{"pat"}, TimeZone: "Europe/Berlin"},
		{ID: "search", Name: "Search team", Parent: "acme", Members: []string{"alice", "bob"}, DailyLimitUSD: usd("50"),
			Approvers: []string{"quinn"}, TimeZone: "Europe/Berlin"},
		{ID: "ads", Name: "Ads team", Parent: "acme", Members: []string{"carol"}, DailyLimitUSD: usd("50"), TimeZone: "Europe/Berlin"},
		{ID: "other", Name: "Other", DailyLimitUSD: usd("50"), Approvers: []string{"quinn"}},
	})
	ctx := context.Background()
	h.mustCall(ctx, "alice", "paid")
	h.mustCall(ctx, "alice", "other")
	h.mustCall(ctx, "carol", "paid")
	h.clock.Advance(time.Hour)
	h.mustCall(ctx, "bob", "paid")

	ids := func(list []toolgatetype.Budget) []string {
		var out []string
		for _, b := range list {
			out = append(out, b.ID)
		}
		return out
	}
	pat, err := h.gw.BudgetsFor(ctx, "pat")
	require.NoError(t, err)
	assert.Equal(t, []string{"acme", "search", "ads"}, ids(pat), "an approver of the organization sees its teams")
	assert.Equal(t, "4.0000", pat[0].Windows[toolgatetype.BudgetMonthly].UsedUSD)
	quinn, err := h.gw.BudgetsFor(ctx, "quinn")
	require.NoError(t, err)
	assert.Equal(t, []string{"search", "other"}, ids(quinn))
	nobody, err := h.gw.BudgetsFor(ctx, "nobody")
	require.NoError(t, err)
	assert.Empty(t, nobody)

	spend, err := h.gw.BudgetSpend(ctx, "pat", "acme", toolgatetype.SpendFilter{GroupBy: toolgatetype.SpendByPrincipal})
	require.NoError(t, err)
	assert.Equal(t, "4.0000", spend.TotalUSD, "the organization's spend holds its teams'")
	assert.Equal(t, map[string]string{"alice": "2.0000", "bob": "1.0000", "carol": "1.0000"}, groups(spend))
	assert.Equal(t, at("2026-02-28T23:00:00Z"), spend.Since, "the default is the budget's month, in its zone")

	spend, err = h.gw.BudgetSpend(ctx, "pat", "search", toolgatetype.SpendFilter{GroupBy: toolgatetype.SpendByDay, FromDay: "2026-03-01"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"2026-03-14": "2.0000", "2026-03-15": "1.0000"}, groups(spend), "days of the budget's zone")

	spend, err = h.gw.BudgetSpend(ctx, "quinn", "search", toolgatetype.SpendFilter{})
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.SpendByTool, spend.GroupBy, "by tool unless asked")
	assert.Equal(t, map[string]string{"paid": "1.0000"}, groups(spend), "a daily budget's spend is its day's unless asked")
	assert.Equal(t, at("2026-03-14T23:00:00Z"), spend.Since, "the budget's day, in its zone")

	// One day: the Berlin day of March 15th only.
	spend, err = h.gw.BudgetSpend(ctx, "pat", "acme", toolgatetype.SpendFilter{
		Since: at("2026-03-14T23:00:00Z"), Until: at("2026-03-15T23:00:00Z"), GroupBy: toolgatetype.SpendByPrincipal})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"bob": "1.0000"}, groups(spend))

	_, err = h.gw.BudgetSpend(ctx, "quinn", "acme", toolgatetype.SpendFilter{})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeNotFound)
	_, err = h.gw.BudgetSpend(ctx, "pat", "nope", toolgatetype.SpendFilter{})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeNotFound)
	_, err = h.gw.BudgetSpend(ctx, "pat", "acme", toolgatetype.SpendFilter{GroupBy: "week"})
	assert.Equal(t, "groupBy", toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest).Parameter)
	_, err = h.gw.BudgetSpend(ctx, "pat", "acme", toolgatetype.SpendFilter{Since: at("2026-03-15T00:00:00Z"), Until: at("2026-03-14T00:00:00Z")})
	assert.Equal(t, "since", toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest).Parameter)
}

func groups(s *toolgatetype.SpendSummary) map[string]string {
	out := map[string]string{}
	for _, g := range s.Groups {
		out[g.Key] = g.TotalUSD
	}
	return out
}
