package postgres

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCallsInNoBudgetNameNoBudgetTable guards what a call in no budget
// costs: the statements it runs (its admission in every form, its finish
// when this Store admitted it, its limits) name none of the budgets'
// tables or columns, each of which a statement pays for at every run.
func TestCallsInNoBudgetNameNoBudgetTable(t *testing.T) {
	for name, stmt := range map[string]string{
		"admit": admitSQL, "admit with a grant": admitGrantSQL, "admit remembered": admitRememberedSQL,
		"admit remembered with a grant": admitGrantRememberedSQL,
		"finish":                        finishSQL, "finish sealed": finishSealedSQL, "measure": measureLimitsSQL,
	} {
		assert.NotContains(t, stmt, "budget", name)
	}
	for name, stmt := range map[string]string{
		"admit": admitBudgetSQL, "admit with a grant": admitGrantBudgetSQL, "admit remembered": admitRememberedBudgetSQL,
		"admit remembered with a grant": admitGrantRememberedBudgetSQL,
		"finish":                        finishBudgetSQL, "finish sealed": finishSealedBudgetSQL, "measure": measureBudgetLimitsSQL,
	} {
		assert.Contains(t, stmt, "budget_daily", name)
	}
}
