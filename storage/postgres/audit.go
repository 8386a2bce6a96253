package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ListExecutions implements storage.Store. Each principal's page is read by
// walking executions_principal_created_idx down from the cursor (or from
// Until, or from the newest), so a page costs about what it returns however
// deep into the history it is: every bound that is set becomes a condition
// on the index, and only the status and tool are filtered as it is walked.
// Several principals (an approver's) are read one index range each, joined
// laterally, and merged.
//
// Only the conditions a query sets are written into its SQL, so the
// planner never meets a "$n IS NULL OR ..." it cannot use the index for;
// there are at most 16 shapes, each prepared once per connection.
func (s *Store) ListExecutions(ctx context.Context, q storage.ExecutionQuery) ([]storage.Execution, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	query, args := s.listSQL(q)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []storage.Execution
	for rows.Next() {
		e, err := scanExecution(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// listSQL is ListExecutions' statement for q and its arguments.
func (s *Store) listSQL(q storage.ExecutionQuery) (string, []any) {
	args := []any{q.Principals, q.Limit}
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	var where strings.Builder
	if q.Status != "" {
		fmt.Fprintf(&where, " AND x.status = %s", arg(string(q.Status)))
	} else {
		where.WriteString(" AND x.status <> 'running'")
	}
	if q.ToolSlug != "" {
		fmt.Fprintf(&where, " AND x.tool_slug = %s", arg(q.ToolSlug))
	}
	if !q.Since.IsZero() {
		fmt.Fprintf(&where, " AND x.created_at >= %s", arg(q.Since))
	}
	if !q.Until.IsZero() {
		fmt.Fprintf(&where, " AND x.created_at < %s", arg(q.Until))
	}
	if q.After != nil {
		// The first condition bounds the index scan; the second only
		// sorts out executions created at the cursor's very instant.
		at, id := arg(q.After.CreatedAt), arg(bytesOf(q.After.ID))
		fmt.Fprintf(&where, " AND x.created_at <= %s AND (x.created_at < %s OR x.id < %s::uuid)", at, at, id)
	}
	return s.sql(`
		SELECT e.* FROM (SELECT DISTINCT unnest($1::text[]) AS principal) p
		CROSS JOIN LATERAL (
			SELECT ` + listedColumns + ` FROM {schema}.executions x
			WHERE x.principal = p.principal` + where.String() + `
			ORDER BY x.created_at DESC, x.id DESC
			LIMIT $2
		) e
		ORDER BY e.created_at DESC, e.id DESC
		LIMIT $2`), args
}

// SpendSummary implements storage.Store. The window is a range of
// executions_principal_created_idx for each principal; completed, charged
// executions are summed as they are read. An execution written before the
// audit columns existed, whose quote was gone, groups under its tool's id.
func (s *Store) SpendSummary(ctx context.Context, q storage.SpendQuery) ([]storage.SpendGroup, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	query, args := s.spendSQL(q)
	if q.Budget != "" {
		var err error
		if query, args, err = s.budgetSpendSQL(q); err != nil {
			return nil, err
		}
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	groups, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (storage.SpendGroup, error) {
		var g storage.SpendGroup
		var total string
		if err := row.Scan(&g.Key, &total, &g.Count); err != nil {
			return g, err
		}
		d, err := parseDecimal(total)
		g.TotalUSD = d
		return g, err
	})
	if err != nil {
		return nil, translate(err)
	}
	// Sorted here, not by the database, whose collation may not order
	// text byte by byte as every other backend does.
	slices.SortFunc(groups, func(a, b storage.SpendGroup) int { return strings.Compare(a.Key, b.Key) })
	return groups, nil
}

// spendSQL is SpendSummary's statement for q and its arguments.
func (s *Store) spendSQL(q storage.SpendQuery) (string, []any) {
	key := `COALESCE(NULLIF(tool_slug, ''), tool_id)`
	if q.GroupBy == toolgatetype.SpendByDay {
		key = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`
	}
	args := []any{q.Principals}
	where := ""
	if !q.Since.IsZero() {
		args = append(args, q.Since)
		where += fmt.Sprintf(" AND created_at >= $%d", len(args))
	}
	if !q.Until.IsZero() {
		args = append(args, q.Until)
		where += fmt.Sprintf(" AND created_at < $%d", len(args))
	}
	return s.sql(`
		SELECT ` + key + ` AS key, sum(amount_usd)::text, count(*)
		FROM {schema}.executions
		WHERE principal = ANY($1::text[]) AND status = 'completed' AND charged` + where + `
		GROUP BY 1`), args
}

// budgetSpendSQL is SpendSummary's statement for a budget's spend
// (q.Budget) and its arguments. It reads budget_spend, what the budget's
// calls were charged per day, principal and tool, which outlives the
// executions: at most a row per day, principal and tool of the range.
func (s *Store) budgetSpendSQL(q storage.SpendQuery) (string, []any, error) {
	from, until := "-infinity", "infinity" // an empty bound is open
	if q.FromDay != "" {
		if err := checkDay(q.FromDay); err != nil {
			return "", nil, fmt.Errorf("postgres: SpendSummary FromDay: %w", err)
		}
		from = q.FromDay
	}
	if q.UntilDay != "" {
		if err := checkDay(q.UntilDay); err != nil {
			return "", nil, fmt.Errorf("postgres: SpendSummary UntilDay: %w", err)
		}
		until = q.UntilDay
	}
	key := "tool"
	switch q.GroupBy {
	case toolgatetype.SpendByDay:
		key = `to_char(day, 'YYYY-MM-DD')`
	case toolgatetype.SpendByPrincipal:
		key = "principal"
	}
	return s.sql(`
		SELECT ` + key + ` AS key, sum(spend_usd)::text, sum(calls)::bigint
		FROM {schema}.budget_spend
		WHERE budget = $1 AND day >= $2::text::date AND day < $3::text::date
		GROUP BY 1`), []any{q.Budget, from, until}, nil
}
