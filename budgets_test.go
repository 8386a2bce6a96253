package toolgate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestNewRefusesABadBudgetNamingTheField(t *testing.T) {
	t.Parallel()
	_, err := toolgate.New(memory.New(), &toolgate.Config{Budgets: []toolgatetype.BudgetDefinition{
		{ID: "acme", Parent: "search", MonthlyLimitUSD: dec("1000")},
		{ID: "search", Parent: "acme", DailyLimitUSD: dec("50")},
	}})
	require.Error(t, err)
	assert.Equal(t, `toolgate: budgets[1].parent: "search" and "acme" make a cycle: acme -> search -> acme`, err.Error())
	assert.False(t, strings.Contains(err.Error(), "\n"))
}

// A gateway without budgets shows none and puts none in a quote.
func TestWithoutBudgetsNoneShow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable})
	q := e.quote("alice", "paid")
	assert.Nil(t, q.Controls.Budgets)
	body, err := json.Marshal(q.Controls)
	require.NoError(t, err)
	assert.NotContains(t, string(body), "budgets")
	all, err := e.gw.Budgets(context.Background())
	require.NoError(t, err)
	assert.Empty(t, all)
	mine, err := e.gw.BudgetsFor(context.Background(), "pat")
	require.NoError(t, err)
	assert.Empty(t, mine)
	_, err = e.gw.BudgetSpend(context.Background(), "pat", "acme", toolgatetype.SpendFilter{})
	requireCode(t, err, toolgatetype.CodeNotFound)
}

// A principal in a budget quoted with its own limits short too: the
// principal's violations come first, the budget's after, and the refusal
// still names the budget.
func TestABudgetRefusalBesideThePrincipalsOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable}, func(c *toolgate.Config) {
		c.SpendControls = toolgate.StaticSpendControls{"alice": {DailyLimitUSD: dec("0.2000")}}
		c.Budgets = []toolgatetype.BudgetDefinition{{ID: "search", Name: "Search team", Members: []string{"alice"}, DailyLimitUSD: dec("0.1500")}}
	})
	res, err := e.tg.CallApproved(t, "alice", "paid", `{"v":"a"}`)
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	q := e.quote("alice", "paid")
	assert.Equal(t, []string{
		"Call would exceed global daily limit of $0.2000",
		"Call would exceed the Search team budget's daily limit of $0.1500",
	}, q.Controls.Violations)
	_, err = e.tg.CallApproved(t, "alice", "paid", `{"v":"b"}`)
	te := requireCode(t, err, toolgatetype.CodeSpendLimitExceeded)
	assert.Equal(t, q.Controls.Violations, te.Violations)
	require.NotNil(t, te.Budget)
	assert.Equal(t, "search", te.Budget.ID)
	assert.Equal(t, "0.1100", te.Budget.UsedUSD)
	assert.Equal(t, "0.1100", te.Budget.RequestedUSD)
}
