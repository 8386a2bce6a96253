package sqlite

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetSpendWhere selects a budget's charged calls on days in [?2, ?3)
// (an empty ?3 is open) from budget_spend (0012_budgets.sql): a range of
// its key, whose rows, per day, principal and tool, were written as each
// call was charged and are kept until Prune takes their day, whatever
// became of the executions.
const budgetSpendWhere = ` WHERE budget = ?1 AND day >= ?2 AND (?3 = '' OR day < ?3)`

// budgetSpendQueries sum what budgetSpendWhere selects, by each grouping.
var budgetSpendQueries = map[toolgatetype.SpendGrouping]string{
	toolgatetype.SpendByDay:       `SELECT day, sum(charged), sum(calls) FROM budget_spend` + budgetSpendWhere + ` GROUP BY day ORDER BY day`,
	toolgatetype.SpendByPrincipal: `SELECT principal, sum(charged), sum(calls) FROM budget_spend` + budgetSpendWhere + ` GROUP BY principal ORDER BY principal`,
	toolgatetype.SpendByTool:      `SELECT tool, sum(charged), sum(calls) FROM budget_spend` + budgetSpendWhere + ` GROUP BY tool ORDER BY tool`,
}

// budgetSpendSummary is SpendSummary for q.Budget: the charged calls that
// count in that budget, by its days. The caller has checked q's grouping;
// its days must be days, which are compared as text.
func (s *Store) budgetSpendSummary(ctx context.Context, q storage.SpendQuery) ([]storage.SpendGroup, error) {
	for _, day := range []string{q.FromDay, q.UntilDay} {
		if day == "" {
			continue
		}
		if err := checkDay(day); err != nil {
			return nil, fmt.Errorf("sqlite: budget %q spend: %w", q.Budget, err)
		}
	}
	rows, err := s.pool(ctx).query(budgetSpendQueries[q.GroupBy], q.Budget, q.FromDay, q.UntilDay)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []storage.SpendGroup{}
	for rows.Next() {
		var (
			g      storage.SpendGroup
			amount int64
		)
		if err := rows.Scan(&g.Key, &amount, &g.Count); err != nil {
			return nil, translate(err)
		}
		g.TotalUSD = fromUnits(amount)
		out = append(out, g)
	}
	return out, translate(rows.Err())
}
