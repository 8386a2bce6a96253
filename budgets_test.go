package toolgate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

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
		c.SpendControls = toolgatetype.StaticSpendControls{"alice": {DailyLimitUSD: dec("0.2000")}}
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

// Days are a budget's: BudgetSpend takes them and places them in the
// budget's zone (Europe/Berlin: March 2030 runs from 23:00 UTC on the last
// day of February to 22:00 UTC on March 31, summer time having begun);
// a day beside its instant, or a day that is no date, is refused naming
// the bound; Spend, whose days would be UTC's, refuses days.
func TestBudgetSpendTakesTheBudgetsDays(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable}, func(c *toolgate.Config) {
		c.Budgets = []toolgatetype.BudgetDefinition{{ID: "berlin", TimeZone: "Europe/Berlin", MonthlyLimitUSD: dec("10"), Approvers: []string{"pat"}}}
	})
	ctx := context.Background()
	budgets, err := e.gw.BudgetsFor(ctx, "pat")
	require.NoError(t, err)
	require.Len(t, budgets, 1)
	assert.Equal(t, "Europe/Berlin", budgets[0].TimeZone)

	sum, err := e.gw.BudgetSpend(ctx, "pat", "berlin", toolgatetype.SpendFilter{FromDay: "2030-03-01", ToDay: "2030-03-31"})
	require.NoError(t, err)
	assert.Equal(t, "2030-02-28T23:00:00Z", sum.Since.Format(time.RFC3339))
	assert.Equal(t, "2030-03-31T22:00:00Z", sum.Until.Format(time.RFC3339))

	for _, c := range []struct {
		name      string
		f         toolgatetype.SpendFilter
		parameter string
	}{
		{"a day and an instant for since", toolgatetype.SpendFilter{FromDay: "2030-03-01", Since: time.Now()}, "since"},
		{"a day and an instant for until", toolgatetype.SpendFilter{ToDay: "2030-03-01", Until: time.Now()}, "until"},
		{"no date", toolgatetype.SpendFilter{FromDay: "2030-02-29"}, "since"},
		{"until's day before since's", toolgatetype.SpendFilter{FromDay: "2030-03-02", ToDay: "2030-03-01"}, "until"},
		// Days the stores cannot name: the day after 9999-12-31 is not a
		// date, nor is one before the year 1.
		{"until in the year 9999", toolgatetype.SpendFilter{Until: time.Date(9999, 12, 31, 12, 0, 0, 0, time.UTC)}, "until"},
		{"until's day the last of 9999", toolgatetype.SpendFilter{ToDay: "9999-12-31"}, "until"},
		{"since before the year 1", toolgatetype.SpendFilter{Since: time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)}, "since"},
	} {
		_, err := e.gw.BudgetSpend(ctx, "pat", "berlin", c.f)
		requireCode(t, err, toolgatetype.CodeInvalidRequest)
		var te *toolgatetype.Error
		require.ErrorAs(t, err, &te)
		assert.Equal(t, c.parameter, te.Parameter, c.name)
	}
	_, err = e.gw.Spend(ctx, "alice", toolgatetype.SpendFilter{FromDay: "2030-03-01"})
	requireCode(t, err, toolgatetype.CodeInvalidRequest)
}
