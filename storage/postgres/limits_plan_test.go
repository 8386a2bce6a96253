package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
)

// TestLimitsReadRawRowsThroughTheIndexes explains the limits' statement
// over 50,000 executions and 50,000 archived ledger rows of 200 principals,
// for windows whose raw part (between Since and its minute) is read, and
// checks that both sides of it read a range of one principal's index,
// executions_principal_created_idx and spend_ledger_principal_idx, never a
// whole table: the raw rows are the part of the statement that grows with
// a principal's history, run under the principal's admission lock. It
// checks the plan for these values and the generic plan, which the plan
// cache settles on (see limitsCTE). go test -v shows the plans.
func TestLimitsReadRawRowsThroughTheIndexes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := sharedPool(t)
	schema := newSchema(t)
	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	now := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	executions := pgx.Identifier{schema, "executions"}.Sanitize()
	ledger := pgx.Identifier{schema, "spend_ledger"}.Sanitize()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	// Rows written as Prune writes the archive; their rollups do not
	// matter to a plan.
	_, err = tx.Exec(ctx, `SELECT set_config('toolgate.ledger_archive', 'on', true),
		set_config('toolgate.admission_rollups', 'inline', true)`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `
		INSERT INTO `+executions+` (id, principal, tool_id, quote_id, idempotency_key, status,
			amount_usd, charged, response, created_at, finished_at, tool_slug, manifest_digest,
			price_usd, fee_usd, approval, fingerprint, lease_token, lease_until, counted)
		SELECT gen_random_uuid(), 'p' || (i % 200), 'tool-' || (i % 5), gen_random_uuid(), 'k' || i,
			CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'completed' END, 0.11, i % 10 <> 0, '\x7b7d'::bytea,
			$1::timestamptz - i * interval '1 second', $1::timestamptz, 'tool-' || (i % 5), 'sha256:x',
			0.10, 0.01, 'digest', 'fp', gen_random_uuid(), $1::timestamptz, i % 50 <> 0
		FROM generate_series(1, 50000) i`, now)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `
		INSERT INTO `+ledger+` (execution_id, principal, tool_id, amount_usd, state, created_at)
		SELECT gen_random_uuid(), 'p' || (i % 200), 'tool-' || (i % 5), 0.11,
			CASE WHEN i % 10 = 0 THEN 'released' ELSE 'charged' END,
			$1::timestamptz - interval '2 days' - i * interval '10 seconds'
		FROM generate_series(1, 50000) i`, now)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	_, err = pool.Exec(ctx, `ANALYZE `+executions+`; ANALYZE `+ledger)
	require.NoError(t, err)

	windows := map[string][]storage.Limit{
		"the last minute and hour, from mid-second": {
			{Measure: storage.MeasureCalls, Since: now.Add(-time.Minute - 1500*time.Millisecond), Max: dec("60")},
			{Measure: storage.MeasureSpend, Since: now.Add(-time.Hour - 1500*time.Millisecond), Max: dec("10")},
		},
		"one tool, three days ago": {
			{ToolID: "tool-2", Measure: storage.MeasureSpend, Since: now.Add(-72*time.Hour + 20*time.Second), Max: dec("10")},
		},
	}
	for name, limits := range windows {
		query, args, err := s.MeasureLimitsSQL("p7", limits)
		require.NoError(t, err)
		for _, mode := range []string{"auto", "force_generic_plan"} {
			root := explainWith(t, mode, name, query, args)
			for _, table := range []struct{ relation, index string }{
				{"executions", "executions_principal_created_idx"},
				{"spend_ledger", "spend_ledger_principal_idx"},
			} {
				var scans [][2]planNode
				scansOf(root, planNode{}, table.relation, &scans)
				require.NotEmpty(t, scans, "%s (%s): %s", name, mode, table.relation)
				for _, sc := range scans {
					index, cond := indexOf(sc[0])
					assert.Equal(t, table.index, index, "%s (%s)", name, mode)
					assert.Contains(t, cond, "principal =", "%s (%s)", name, mode)
					assert.Contains(t, cond, "created_at >=", "%s (%s): the window is a range of the index", name, mode)
				}
			}
		}
	}
}

// explainWith returns the plan of query under plan_cache_mode mode and
// logs it as text.
func explainWith(t *testing.T, mode, name, query string, args []any) planNode {
	t.Helper()
	ctx := t.Context()
	tx, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT set_config('plan_cache_mode', $1, true)`, mode)
	require.NoError(t, err)
	var raw []byte
	require.NoError(t, tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+query, args...).Scan(&raw))
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(raw, &plans))
	require.Len(t, plans, 1)
	rows, err := tx.Query(ctx, "EXPLAIN "+query, args...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	t.Logf("%s (%s):", name, mode)
	for _, l := range lines {
		t.Log(l)
	}
	return plans[0].Plan
}
