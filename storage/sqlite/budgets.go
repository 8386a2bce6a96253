package sqlite

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// A call's budgets (storage.Begin.Budgets) are a column of its execution,
// JSON that the triggers of 0012_budgets.sql read with json_each to count
// the call in each budget's tables, and that reads give back as
// storage.Execution.Budgets. A call in no budget stores NULL, which those
// triggers stop at.

// budgetDay is one element of the executions.budgets column.
type budgetDay struct {
	Budget string `json:"budget"`
	Day    string `json:"day"`
}

// dayLayout is how a budget's calendar day is written, and compares as
// text in the order of the days.
const dayLayout = "2006-01-02"

// checkBudgets refuses budgets the tables could not count right: an empty
// id, a day that is not a calendar day as YYYY-MM-DD (days are compared as
// text), and a budget named twice, which would count the call twice in it.
func checkBudgets(budgets []storage.BudgetDay) error {
	for i, b := range budgets {
		if b.Budget == "" {
			return fmt.Errorf("sqlite: budget %d has no id", i)
		}
		if err := checkDay(b.Day); err != nil {
			return fmt.Errorf("sqlite: budget %q: %w", b.Budget, err)
		}
		for _, earlier := range budgets[:i] {
			if earlier.Budget == b.Budget {
				return fmt.Errorf("sqlite: budget %q is named twice", b.Budget)
			}
		}
	}
	return nil
}

// checkDay requires day to be a calendar day written as YYYY-MM-DD.
func checkDay(day string) error {
	if t, err := time.Parse(dayLayout, day); err != nil || t.Format(dayLayout) != day {
		return fmt.Errorf("day %q is not a date as YYYY-MM-DD", day)
	}
	return nil
}

// budgetsColumn encodes budgets for the executions.budgets column: NULL
// when there are none.
func budgetsColumn(budgets []storage.BudgetDay) (any, error) {
	if len(budgets) == 0 {
		return nil, nil
	}
	col := make([]budgetDay, len(budgets))
	for i, b := range budgets {
		col[i] = budgetDay(b)
	}
	out, err := json.Marshal(col)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode budgets: %w", err)
	}
	return string(out), nil
}

// parseBudgets decodes the executions.budgets column; NULL is nil.
func parseBudgets(col *string) ([]storage.BudgetDay, error) {
	if col == nil {
		return nil, nil
	}
	var days []budgetDay
	if err := json.Unmarshal([]byte(*col), &days); err != nil {
		return nil, fmt.Errorf("sqlite: stored budgets are not readable: %w", err)
	}
	if len(days) == 0 {
		return nil, nil
	}
	out := make([]storage.BudgetDay, len(days))
	for i, d := range days {
		out[i] = storage.BudgetDay(d)
	}
	return out, nil
}
