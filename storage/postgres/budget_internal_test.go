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
		"finish kept": finishKeptSQL, "finish sealed kept": finishSealedKeptSQL,
	} {
		assert.NotContains(t, stmt, "budget", name)
	}
	for name, stmt := range map[string]string{
		"admit": admitBudgetSQL, "admit with a grant": admitGrantBudgetSQL, "admit remembered": admitRememberedBudgetSQL,
		"admit remembered with a grant": admitGrantRememberedBudgetSQL,
		"finish":                        finishBudgetSQL, "finish sealed": finishSealedBudgetSQL, "measure": measureBudgetLimitsSQL,
		"finish kept": finishBudgetKeptSQL, "finish sealed kept": finishSealedBudgetKeptSQL,
	} {
		assert.Contains(t, stmt, "budget_daily", name)
	}
}

// TestKeptFinishNamesNoReleasedRollup guards what a charged call's finish
// costs: the forms for an outcome that keeps the reservation write
// neither of the principal's rollups, and refuse an outcome that releases.
func TestKeptFinishNamesNoReleasedRollup(t *testing.T) {
	for name, stmt := range map[string]string{
		"finish": finishKeptSQL, "finish sealed": finishSealedKeptSQL,
		"finish in budgets": finishBudgetKeptSQL, "finish sealed in budgets": finishSealedBudgetKeptSQL,
	} {
		assert.NotContains(t, stmt, "spend_daily", name)
		assert.NotContains(t, stmt, "spend_minute", name)
		assert.Contains(t, stmt, "AND NOT $9::boolean", name)
	}
	for name, stmt := range map[string]string{
		"finish": finishSQL, "finish sealed": finishSealedSQL,
		"finish in budgets": finishBudgetSQL, "finish sealed in budgets": finishSealedBudgetSQL,
	} {
		assert.Contains(t, stmt, "released_minute", name)
	}
}
