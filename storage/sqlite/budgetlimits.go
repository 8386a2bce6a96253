package sqlite

import (
	"time"

	"github.com/toolgate/toolgate/storage"
)

// A budget's limit (storage.Limit.Budget) counts every member's calls, so
// it is read from the budget's own tables (0012_budgets.sql), never from a
// principal's:
//
//   - its spend limits sum budget_daily from the window's first day on, at
//     most one row per tool and day of the budget's zone: a month's window
//     costs 31 rows per tool however many calls the members made;
//   - its calls limits (the rate its members share per minute) count the
//     rows of budget_calls from the window's start, on its key: a minute's
//     calls.

// budgetMeasureSQL sums what one budget limit's window holds: calls and
// spend. ?1 the budget, ?2 the tool (empty for all), ?3 the measure, ?4 the
// first day (spend), ?5 the window's start (calls). The measure picks one
// of the two reads; the other is cut by its constant condition before it
// reads a row.
const budgetMeasureSQL = `
SELECT coalesce(sum(calls), 0) AS calls, coalesce(sum(spend), 0) AS spend FROM (
	SELECT 0 AS calls, spend FROM budget_daily
	WHERE ?3 = 'spend' AND budget = ?1 AND day >= ?4 AND (?2 = '' OR tool_id = ?2)
	UNION ALL
	SELECT 1, 0 FROM budget_calls
	WHERE ?3 = 'calls' AND budget = ?1 AND created_at >= ?5 AND (?2 = '' OR tool_id = ?2)
)`

// budgetMeasureManySQL is budgetMeasureSQL for n limits in one statement.
var budgetMeasureManySQL = batched(budgetMeasureSQL, 5)

// budgetMeasureArgs adds budget limit l's arguments to budgetMeasureSQL's.
func budgetMeasureArgs(args []any, l storage.Limit) []any {
	return append(args, l.Budget, l.ToolID, string(l.Measure), l.FromDay, nanos(l.Since))
}

// budgetOldestCallSQL finds the creation of the oldest call a budget's
// calls limit counts: the first row of its window. ?1 the budget, ?2 the
// tool, ?3 the window's start.
const budgetOldestCallSQL = `
SELECT created_at FROM budget_calls
WHERE budget = ?1 AND created_at >= ?3 AND (?2 = '' OR tool_id = ?2)
ORDER BY created_at LIMIT 1`

// budgetOldestSpendSQL finds the creation of the oldest call a budget's
// spend limit counts: one on a day of the window that still holds its
// amount. The walk of the budget's calls starts at the first call its
// days' rows counted (first_at), not at the budget's oldest kept call, so
// a refusal reads the window's first calls and not the days before it.
// ?1 the budget, ?2 the tool, ?3 the first day.
const budgetOldestSpendSQL = `
SELECT created_at FROM budget_calls
WHERE budget = ?1
	AND created_at >= (SELECT min(first_at) FROM budget_daily WHERE budget = ?1 AND day >= ?3 AND (?2 = '' OR tool_id = ?2))
	AND day >= ?3 AND released = 0 AND (?2 = '' OR tool_id = ?2)
ORDER BY created_at LIMIT 1`

// budgetOldest returns the creation of the oldest call budget limit l
// counts, or the zero time when it counts none. Only a refusal asks.
func budgetOldest(q reader, l storage.Limit) (time.Time, error) {
	var (
		at  *int64
		err error
	)
	if l.Measure == storage.MeasureCalls {
		err = q.queryRow(budgetOldestCallSQL, l.Budget, l.ToolID, nanos(l.Since)).Scan(&at)
	} else {
		err = q.queryRow(budgetOldestSpendSQL, l.Budget, l.ToolID, l.FromDay).Scan(&at)
	}
	switch err = translate(err); {
	case isNotFound(err):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, err
	}
	return nullNanos(at), nil
}
