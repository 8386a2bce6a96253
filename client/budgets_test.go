package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolgatetype"
)

// newBudgetEnv is the test gateway with two budgets: the organization's,
// which pat oversees, and alice's team under it, whose daily limit one
// call of paid fills; sam oversees neither.
func newBudgetEnv(t *testing.T) *env {
	t.Helper()
	usd := func(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }
	return newEnv(t, &envOptions{config: &toolgate.Config{Budgets: []toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", MonthlyLimitUSD: usd("1000"), Approvers: []string{"pat"}},
		{ID: "search", Name: "Search team", Parent: "acme", Members: []string{"alice"}, DailyLimitUSD: usd("0.1500")},
	}}})
}

func TestClientBudgets(t *testing.T) {
	t.Parallel()
	e := newBudgetEnv(t)
	ctx := context.Background()
	alice := e.client(nil)
	q, err := alice.Quote(ctx, "paid")
	require.NoError(t, err)
	require.Len(t, q.Controls.Budgets, 2, "the quote shows the caller's budgets")
	assert.Equal(t, "search", q.Controls.Budgets[0].ID)
	res, err := alice.Call(ctx, keyed(approved(q, "one"), "budget-1"))
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	total := q.Quote.TotalUSD

	// The team's budget refuses the next call, and the client's error
	// names it as the gateway's does in process.
	q2, err := alice.Quote(ctx, "paid")
	require.NoError(t, err)
	_, err = alice.Call(ctx, keyed(approved(q2, "two"), "budget-2"))
	var te *toolgatetype.Error
	require.True(t, errors.As(err, &te), "%v", err)
	assert.Equal(t, toolgatetype.CodeSpendLimitExceeded, te.Code)
	require.NotNil(t, te.Budget)
	assert.Equal(t, "search", te.Budget.ID)
	assert.Equal(t, toolgatetype.BudgetDaily, te.Budget.Window)
	assert.Equal(t, "0.1500", te.Budget.LimitUSD)
	assert.Equal(t, total, te.Budget.UsedUSD)
	assert.Equal(t, total, te.Budget.RequestedUSD)
	_, inProcess := e.gw.Gateway.Call(ctx, "alice", keyed(approved(e.quote("paid"), "three"), "budget-3"))
	var embedded *toolgatetype.Error
	require.True(t, errors.As(inProcess, &embedded))
	assert.Equal(t, embedded.Budget, te.Budget, "the client's refusal is the embedded one")

	pat := e.clientAs("pat", nil)
	budgets, err := pat.Budgets(ctx)
	require.NoError(t, err)
	require.Len(t, budgets, 2)
	assert.Equal(t, "acme", budgets[0].ID)
	assert.Equal(t, "search", budgets[1].ID)
	assert.Equal(t, total, budgets[1].Windows[toolgatetype.BudgetDaily].UsedUSD)
	assert.Equal(t, "0.1500", budgets[1].Windows[toolgatetype.BudgetDaily].LimitUSD)

	sum, err := pat.BudgetSpend(ctx, "acme", toolgatetype.SpendFilter{GroupBy: toolgatetype.SpendByPrincipal})
	require.NoError(t, err)
	assert.Equal(t, []toolgatetype.SpendGroup{{Key: "alice", TotalUSD: total, Count: 1}}, sum.Groups)
	now := e.gw.Clock.Now()
	sum, err = pat.BudgetSpend(ctx, "search", toolgatetype.SpendFilter{GroupBy: toolgatetype.SpendByDay, Since: now.AddDate(0, 0, -3), Until: now})
	require.NoError(t, err)
	assert.Equal(t, []toolgatetype.SpendGroup{{Key: now.UTC().Format(time.DateOnly), TotalUSD: total, Count: 1}}, sum.Groups)
	today := now.UTC().Format(time.DateOnly)
	sum, err = pat.BudgetSpend(ctx, "search", toolgatetype.SpendFilter{GroupBy: toolgatetype.SpendByDay, FromDay: today, ToDay: today})
	require.NoError(t, err)
	assert.Equal(t, []toolgatetype.SpendGroup{{Key: today, TotalUSD: total, Count: 1}}, sum.Groups, "a day, the last included, goes as a date")
	assert.Equal(t, 24*time.Hour, sum.Until.Sub(sum.Since))
	assert.Equal(t, "UTC", budgets[1].TimeZone)

	// Refusals come back as the gateway's errors.
	for _, c := range []struct {
		name      string
		do        func() error
		code      toolgatetype.Code
		parameter string
	}{
		{"a caller lists budgets", func() error { _, err := alice.Budgets(ctx); return err }, toolgatetype.CodeApproverRequired, ""},
		{"a budget another approver oversees", func() error {
			_, err := e.clientAs("sam", nil).BudgetSpend(ctx, "search", toolgatetype.SpendFilter{})
			return err
		}, toolgatetype.CodeNotFound, ""},
		{"an unknown budget", func() error { _, err := pat.BudgetSpend(ctx, "nope", toolgatetype.SpendFilter{}); return err }, toolgatetype.CodeNotFound, ""},
		{"a grouping the gateway does not know", func() error {
			_, err := pat.BudgetSpend(ctx, "search", toolgatetype.SpendFilter{GroupBy: "week"})
			return err
		}, toolgatetype.CodeInvalidRequest, "groupBy"},
		{"until before since", func() error {
			_, err := pat.BudgetSpend(ctx, "search", toolgatetype.SpendFilter{Since: now, Until: now.Add(-time.Hour)})
			return err
		}, toolgatetype.CodeInvalidRequest, "to"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var te *toolgatetype.Error
			require.True(t, errors.As(c.do(), &te))
			assert.Equal(t, c.code, te.Code)
			assert.Equal(t, c.parameter, te.Parameter)
		})
	}
}

// keyed is req sent under idempotency key k.
func keyed(req toolgatetype.CallRequest, k string) toolgatetype.CallRequest {
	req.IdempotencyKey = k
	return req
}
