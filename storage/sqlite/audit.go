package sqlite

import (
	"context"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// ListExecutions implements storage.Store. Each principal's page is one
// walk down executions_principal_created from its bound (the cursor,
// Until, or the newest), stopping after a page; several principals' pages
// are merged here.
func (s *Store) ListExecutions(ctx context.Context, q storage.ExecutionQuery) ([]storage.Execution, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	query, args := listSQL(q)
	var out []storage.Execution
	for _, p := range distinct(q.Principals) {
		rows, err := s.pool(ctx).query(query, append([]any{p}, args...)...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			e, err := scanExecution(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, e)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, translate(err)
		}
	}
	slices.SortFunc(out, func(a, b storage.Execution) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(string(b.ID[:]), string(a.ID[:]))
	})
	return out[:min(len(out), q.Limit)], nil
}

// listSQL is one principal's page query for q, and its arguments after the
// principal. Only the conditions q sets are written, so each is a bound of
// the index walk; there are at most 16 shapes, each prepared once.
func listSQL(q storage.ExecutionQuery) (string, []any) {
	var where strings.Builder
	var args []any
	if q.Status != "" {
		where.WriteString(" AND status = ?")
		args = append(args, string(q.Status))
	} else {
		where.WriteString(" AND status <> 'running'")
	}
	if q.ToolSlug != "" {
		where.WriteString(" AND tool_slug = ?")
		args = append(args, q.ToolSlug)
	}
	if !q.Since.IsZero() {
		where.WriteString(" AND created_at >= ?")
		args = append(args, nanos(q.Since))
	}
	if !q.Until.IsZero() {
		where.WriteString(" AND created_at < ?")
		args = append(args, nanos(q.Until))
	}
	if q.After != nil {
		at := nanos(q.After.CreatedAt)
		where.WriteString(" AND created_at <= ? AND (created_at < ? OR id < ?)")
		args = append(args, at, at, idBytes(q.After.ID))
	}
	args = append(args, q.Limit)
	return `SELECT ` + listedColumns + ` FROM executions
		WHERE principal = ?` + where.String() + `
		ORDER BY created_at DESC, id DESC LIMIT ?`, args
}

// SpendSummary implements storage.Store: the completed, charged executions
// of each principal in the window, a range of executions_principal_created,
// grouped here. An execution written before the audit columns existed,
// whose quote was gone, groups under its tool's id. A budget's spend
// (q.Budget) is summed from its own table instead (budgetspend.go).
func (s *Store) SpendSummary(ctx context.Context, q storage.SpendQuery) ([]storage.SpendGroup, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	if q.Budget != "" {
		return s.budgetSpendSummary(ctx, q)
	}
	groups := map[string]*storage.SpendGroup{}
	for _, p := range distinct(q.Principals) {
		rows, err := s.pool(ctx).query(`
			SELECT COALESCE(NULLIF(tool_slug, ''), tool_id), created_at, amount FROM executions
			WHERE principal = ? AND created_at >= ? AND created_at < ? AND status = 'completed' AND charged = 1`,
			p, nanos(q.Since), spendUntil(q))
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var (
				slug            string
				created, amount int64
			)
			if err := rows.Scan(&slug, &created, &amount); err != nil {
				rows.Close()
				return nil, translate(err)
			}
			key := q.GroupBy.Key(slug, fromNanos(created))
			g := groups[key]
			if g == nil {
				g = &storage.SpendGroup{Key: key, TotalUSD: decimal.Zero}
				groups[key] = g
			}
			g.TotalUSD = g.TotalUSD.Add(fromUnits(amount))
			g.Count++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, translate(err)
		}
	}
	out := make([]storage.SpendGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b storage.SpendGroup) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// spendUntil is the window's end as stored; a zero Until is open.
func spendUntil(q storage.SpendQuery) int64 {
	if q.Until.IsZero() {
		return nanos(latestNano)
	}
	return nanos(q.Until)
}

// distinct returns the principals without repeats, so none is read twice.
func distinct(principals []string) []string {
	if len(principals) == 1 {
		return principals
	}
	out := slices.Clone(principals)
	slices.Sort(out)
	return slices.Compact(out)
}
