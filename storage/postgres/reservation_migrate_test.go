package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
)

// TestReservationMigrationKeepsEveryCall: a schema at migration 0014
// holding completed, failed, running (lease live and lease ended) and
// ambiguous calls, one whose reservation was already pruned, and archived
// reservations of pruned executions, migrated to 0015, counts the same
// calls and spend: the rollups are untouched, and every limit measures
// what the ledger's rows summed to before. A later release moves the
// rollups once, pruning executions archives what still counts without
// moving them, pruning old history empties them, and a write of the
// version before is refused with an error naming the migration.
func TestReservationMigrationKeepsEveryCall(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	pool := sharedPool(t)
	migrateSchemaTo(t, schema, 14)

	// Mid-minute, so that windows from around it read raw rows.
	at := t0.Add(-10*time.Minute + 17*time.Second)
	now := t0
	type call struct {
		key        string
		status     storage.ExecutionStatus
		leaseUntil time.Time
		amount     string
		ledger     string // the reservation's ledger state; "" when already pruned
		id, lease  uuid.UUID
	}
	calls := []*call{
		{key: "k-done", status: storage.ExecutionCompleted, leaseUntil: now.Add(time.Minute), amount: "1.1000", ledger: "charged"},
		{key: "k-failed", status: storage.ExecutionFailed, leaseUntil: now.Add(time.Minute), amount: "0.2000", ledger: "released"},
		{key: "k-live", status: storage.ExecutionRunning, leaseUntil: now.Add(time.Hour), amount: "0.1100", ledger: "reserved"},
		{key: "k-expired", status: storage.ExecutionRunning, leaseUntil: at.Add(10 * time.Second), amount: "0.1300", ledger: "reserved"},
		{key: "k-ambiguous", status: storage.ExecutionAmbiguous, leaseUntil: now.Add(time.Minute), amount: "0.1700", ledger: "reserved"},
		{key: "k-old", status: storage.ExecutionCompleted, leaseUntil: now.Add(time.Minute), amount: "5.0000"},
	}
	// The version before's writes, through its tables: the ledger's insert
	// trigger counts each row in the rollups.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL search_path TO `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	for i, c := range calls {
		c.id, c.lease = uuid.New(), uuid.New()
		created := at.Add(time.Duration(i) * 7 * time.Second)
		var response []byte
		if c.status != storage.ExecutionRunning {
			response = []byte(`{}`)
		}
		_, err := tx.Exec(ctx, `INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status,
				amount_usd, charged, response, created_at, tool_slug, manifest_digest, price_usd, fee_usd, approval,
				fingerprint, lease_token, lease_until)
			VALUES ($1, 'alice', 'tool-a', gen_random_uuid(), $2, $3, $4, $5, $6, $7, 'slug-tool-a', 'sha256:tool-a',
				$4, 0, 'digest', $8, $9, $10)`,
			c.id, c.key, string(c.status), c.amount, c.status == storage.ExecutionCompleted, response, created,
			"fp:"+c.key, c.lease, c.leaseUntil)
		require.NoError(t, err, c.key)
		if c.ledger != "" {
			_, err = tx.Exec(ctx, `INSERT INTO spend_ledger (execution_id, principal, tool_id, amount_usd, state, created_at)
				VALUES ($1, 'alice', 'tool-a', $2, $3, $4)`, c.id, c.amount, c.ledger, created)
			require.NoError(t, err, c.key)
		}
	}
	// Reservations of executions pruned before the upgrade: a charged call
	// of three hours ago and an abandoned run of two days ago.
	_, err = tx.Exec(ctx, `INSERT INTO spend_ledger (execution_id, principal, tool_id, amount_usd, state, created_at)
		VALUES (gen_random_uuid(), 'alice', 'tool-a', 2.0000, 'charged', $1),
			(gen_random_uuid(), 'alice', 'tool-b', 0.4000, 'reserved', $2)`,
		now.Add(-3*time.Hour+13*time.Second), now.AddDate(0, 0, -2))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	limits := everySince([]time.Time{at, now.Add(-3 * time.Hour)})
	// What the version before measured: every limit equals the sum of the
	// ledger's rows in its window, which its rollups and raw reads added
	// up to.
	before := make([]string, len(limits))
	for i, l := range limits {
		var spend, n string
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT COALESCE(SUM(amount_usd) FILTER (WHERE state <> 'released'), 0)::text, count(*)::text
			FROM `+pgx.Identifier{schema, "spend_ledger"}.Sanitize()+`
			WHERE principal = 'alice' AND created_at >= $1 AND ($2 = '' OR tool_id = $2)`,
			l.Since, l.ToolID).Scan(&spend, &n))
		before[i] = n
		if l.Measure == storage.MeasureSpend {
			before[i] = spend
		}
	}
	rollupsBefore := rollupRows(t, schema)

	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	assertOneSetOfTables(t, schema)
	assert.Equal(t, rollupsBefore, rollupRows(t, schema), "the rollups are untouched")
	got, err := s.MeasureLimits(ctx, "alice", limits)
	require.NoError(t, err)
	for i, l := range limits {
		assert.Truef(t, dec(before[i]).Equal(got[i]), "%s of %q since %s: before %s, after %s",
			l.Measure, l.ToolID, l.Since.Format(time.RFC3339Nano), before[i], got[i])
	}
	assertMeasuresExact(t, s, schema, []string{"alice"}, limits)
	// 1.10 + 0.11 + 0.13 + 0.17 + 2.00 + 0.40 over seven calls; k-old's
	// reservation was pruned before.
	assertUsed(t, s, "alice", "3.91", "7")
	var archived, uncounted int
	require.NoError(t, pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM `+pgx.Identifier{schema, "spend_ledger"}.Sanitize()+`),
		(SELECT count(*) FROM `+pgx.Identifier{schema, "executions"}.Sanitize()+` WHERE NOT counted)`).
		Scan(&archived, &uncounted))
	assert.Equal(t, 2, archived, "only the reservations of pruned executions stay in the ledger")
	assert.Equal(t, 1, uncounted, "k-old no longer counts")

	// A gateway of the version before, left running: its admission's
	// reservation, its finish's ledger update (which matches no row now)
	// and its Prune's deletion of executions are each refused.
	ledger := pgx.Identifier{schema, "spend_ledger"}.Sanitize()
	_, err = pool.Exec(ctx, `INSERT INTO `+ledger+` (execution_id, principal, tool_id, amount_usd, state, created_at)
		VALUES (gen_random_uuid(), 'alice', 'tool-a', 1, 'reserved', $1)`, now)
	assert.ErrorContains(t, err, "migration 0015")
	_, err = pool.Exec(ctx, `WITH execution AS (
			UPDATE `+pgx.Identifier{schema, "executions"}.Sanitize()+` SET status = 'failed', response = ''
			WHERE id = $1 AND status = 'running' RETURNING id
		), reservation AS (
			UPDATE `+ledger+` l SET state = 'released' FROM execution WHERE l.execution_id = $1 AND l.state = 'reserved'
		)
		SELECT count(*) FROM execution`, calls[2].id)
	assert.ErrorContains(t, err, "migration 0015")
	_, err = pool.Exec(ctx, `DELETE FROM `+pgx.Identifier{schema, "executions"}.Sanitize()+` WHERE id = $1`, calls[0].id)
	assert.ErrorContains(t, err, "migration 0015")
	assert.Equal(t, rollupsBefore, rollupRows(t, schema), "nothing of the refused writes is left")

	// The live run, admitted before the upgrade, fails under its lease: its
	// amount leaves its day's and minute's rollups once; the ambiguous call
	// is resolved as failed: the same.
	live := calls[2]
	require.NoError(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: live.key, ExecutionID: live.id, LeaseToken: live.lease,
		Status: storage.ExecutionFailed, Response: []byte(`{}`), Now: now,
	}))
	assertUsed(t, s, "alice", "3.80", "7")
	amb := calls[4]
	_, err = s.ResolveExecution(ctx, storage.Resolve{
		ExecutionID: amb.id, Outcome: storage.ExecutionFailed, ResolvedBy: "approver", Now: now, Response: []byte(`{}`),
	})
	require.NoError(t, err)
	assertUsed(t, s, "alice", "3.63", "7")
	assertMeasuresExact(t, s, schema, []string{"alice"}, limits)

	// Pruning every execution archives the five that count, the abandoned
	// run still reserved, and leaves the rollups as they are.
	rollupsSettled := rollupRows(t, schema)
	res, err := s.Prune(context.WithoutCancel(ctx), storage.Prune{IdempotencyBefore: now.Add(24 * time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, len(calls), res.Idempotency)
	assert.Equal(t, rollupsSettled, rollupRows(t, schema), "archiving moves no rollup")
	var states string
	require.NoError(t, pool.QueryRow(ctx, `SELECT string_agg(state, ',' ORDER BY created_at) FROM `+ledger).Scan(&states))
	assert.Equal(t, "reserved,charged,charged,released,released,reserved,released", states)
	assertUsed(t, s, "alice", "3.63", "7")
	assertMeasuresExact(t, s, schema, []string{"alice"}, limits)

	// Pruning all history empties the archive and the rollups together.
	res, err = s.Prune(ctx, storage.Prune{LedgerBefore: now.Add(24 * time.Hour), Limit: 4})
	require.NoError(t, err)
	assert.Equal(t, 4, res.Ledger)
	assertMeasuresExact(t, s, schema, []string{"alice"}, limits)
	res, err = s.Prune(ctx, storage.Prune{LedgerBefore: now.Add(24 * time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, 3, res.Ledger)
	assert.Empty(t, rollupRows(t, schema))
	assertUsed(t, s, "alice", "0", "0")
}

// rollupRows is every row of schema's day and minute rollups, as text.
func rollupRows(t *testing.T, schema string) []string {
	t.Helper()
	rows, err := sharedPool(t).Query(t.Context(), `
		SELECT format('day %s %s %s %s %s', principal, day, tool_id, calls, spend_usd)
		FROM `+pgx.Identifier{schema, "spend_daily"}.Sanitize()+`
		UNION ALL
		SELECT format('minute %s %s %s %s %s', principal, minute AT TIME ZONE 'UTC', tool_id, calls, spend_usd)
		FROM `+pgx.Identifier{schema, "spend_minute"}.Sanitize()+`
		ORDER BY 1`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}
