package postgres_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetype"
)

// planNode is one node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	IndexName string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Plans     []planNode `json:"Plans"`
}

// scansOf returns every scan of relation in the plan with its parent node.
func scansOf(n, parent planNode, relation string, out *[][2]planNode) {
	if n.Relation == relation {
		*out = append(*out, [2]planNode{n, parent})
	}
	for _, c := range n.Plans {
		scansOf(c, n, relation, out)
	}
}

// TestAuditQueriesUseTheIndex explains the listing's and the spend
// summary's statements over 50,000 executions of 200 principals and checks
// that each reads executions_principal_created_idx, never the whole table:
// a listing page walks one index range per principal down from the cursor
// (with no sort of its own, so it stops after a page), a window is a range
// of the index (the planner may then read it as a bitmap and sort the few
// rows in it), and so is a spend summary. go test -v shows the plans.
func TestAuditQueriesUseTheIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := sharedPool(t)
	schema := pgx.Identifier{newSchema(t)}.Sanitize()
	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: strings.Trim(schema, `"`)})
	require.NoError(t, err)
	now := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	_, err = pool.Exec(ctx, `
		INSERT INTO `+schema+`.executions (id, principal, tool_id, quote_id, idempotency_key, status,
			amount_usd, charged, response, created_at, finished_at, tool_slug, manifest_digest,
			price_usd, fee_usd, approval, fingerprint, lease_token, lease_until)
		SELECT gen_random_uuid(), 'p' || (i % 200), 'tool-' || (i % 5), gen_random_uuid(), 'k' || i,
			CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'completed' END, 0.11, i % 10 <> 0, '\x7b7d'::bytea,
			$1::timestamptz - i * interval '1 second', $1::timestamptz, 'tool-' || (i % 5), 'sha256:x',
			0.10, 0.01, 'digest', 'fp', gen_random_uuid(), $1::timestamptz
		FROM generate_series(1, 50000) i`, now)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE `+schema+`.executions`)
	require.NoError(t, err)

	cursor := &storage.ExecutionPosition{CreatedAt: now.Add(-time.Hour), ID: uuid.New()}
	lists := map[string]storage.ExecutionQuery{
		"first page":         {Principals: []string{"p7"}, Limit: 21},
		"after a cursor":     {Principals: []string{"p7"}, Limit: 21, After: cursor},
		"every filter":       {Principals: []string{"p7"}, Limit: 21, After: cursor, Status: storage.ExecutionFailed, ToolSlug: "tool-2", Since: now.Add(-10 * time.Hour), Until: now},
		"several principals": {Principals: []string{"p7", "p8", "p9"}, Limit: 21, After: cursor},
	}
	for name, q := range lists {
		query, args := s.ListSQL(q)
		root := explain(t, pool, name, query, args)
		var scans [][2]planNode
		scansOf(root, planNode{}, "executions", &scans)
		require.NotEmpty(t, scans, name)
		for _, sc := range scans {
			scan, parent := sc[0], sc[1]
			index, cond := indexOf(scan)
			assert.Equal(t, "executions_principal_created_idx", index, name)
			if q.Since.IsZero() {
				// However deep the page, the walk stops after it.
				assert.Equal(t, "Index Scan", scan.NodeType, name)
				assert.Equal(t, "Limit", parent.NodeType, "%s: the index order is the page's order, nothing sorts it", name)
			}
			if q.After != nil {
				assert.Contains(t, cond, "created_at <=", "%s: the cursor is where the walk starts", name)
			}
		}
	}

	for _, groupBy := range []toolgatetype.SpendGrouping{toolgatetype.SpendByTool, toolgatetype.SpendByDay} {
		name := "spend by " + string(groupBy)
		query, args := s.SpendSQL(storage.SpendQuery{Principals: []string{"p7"}, Since: now.Add(-24 * time.Hour), Until: now, GroupBy: groupBy})
		root := explain(t, pool, name, query, args)
		var scans [][2]planNode
		scansOf(root, planNode{}, "executions", &scans)
		require.NotEmpty(t, scans, name)
		for _, sc := range scans {
			index, cond := indexOf(sc[0])
			assert.Equal(t, "executions_principal_created_idx", index, name)
			assert.Contains(t, cond, "created_at >=", "%s: the window is a range of the index", name)
		}
	}
}

// indexOf is the index a scan reads and its condition: its own, or its
// bitmap's.
func indexOf(scan planNode) (name, cond string) {
	if scan.IndexName != "" {
		return scan.IndexName, scan.IndexCond
	}
	for _, c := range scan.Plans {
		if c.NodeType == "Bitmap Index Scan" {
			return c.IndexName, c.IndexCond
		}
	}
	return "", ""
}

// explain returns the plan of query and logs it as text.
func explain(t *testing.T, pool *pgxpool.Pool, name, query string, args []any) planNode {
	t.Helper()
	var raw []byte
	require.NoError(t, pool.QueryRow(t.Context(), "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&raw))
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &plans))
	require.Len(t, plans, 1)
	t.Logf("%s:\n%s", name, planText(t, pool, query, args))
	return plans[0].Plan
}

// planText is the plan of query as EXPLAIN prints it.
func planText(t *testing.T, pool *pgxpool.Pool, query string, args []any) string {
	t.Helper()
	rows, err := pool.Query(t.Context(), "EXPLAIN "+query, args...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}
