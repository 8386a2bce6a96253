package postgres_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
)

// ambiguousCall admits a call of principal on s and finishes it ambiguous.
func ambiguousCall(t *testing.T, s *postgres.Store, principal, key string, at time.Time) storage.Begin {
	t.Helper()
	ctx := t.Context()
	q := testQuote(principal, "tool-a", "0.11", at)
	require.NoError(t, s.CreateQuote(ctx, q))
	b := testBegin(q, key, at)
	_, err := s.BeginExecution(ctx, b)
	require.NoError(t, err)
	require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionAmbiguous, at.Add(time.Second))))
	return b
}

// assertWaiting checks what AmbiguousWaiting says.
func assertWaiting(t *testing.T, s *postgres.Store, n int64, oldest time.Time, msg string) {
	t.Helper()
	gotN, gotOldest, err := s.AmbiguousWaiting(t.Context())
	require.NoError(t, err, msg)
	assert.Equal(t, n, gotN, msg)
	assert.True(t, oldest.Equal(gotOldest), "%s: oldest %v, want %v", msg, gotOldest, oldest)
}

// TestAmbiguousWaitingMigrationCountsThoseWaiting: calls that ended
// ambiguous before migration 0019 are counted once it has run, as are
// those after; a resolved one is not.
func TestAmbiguousWaitingMigrationCountsThoseWaiting(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	pool := sharedPool(t)
	old, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	before := ambiguousCall(t, old, "alice", "before", t0)
	resolved := ambiguousCall(t, old, "bob", "resolved", t0.Add(-time.Hour))
	_, err = old.ResolveExecution(ctx, storage.Resolve{ExecutionID: resolved.ExecutionID, Outcome: storage.ExecutionFailed,
		ResolvedBy: "ops", Now: t0, Response: []byte(`{"status":"failed"}`)})
	require.NoError(t, err)
	old.Close()

	// Back to the schema before migration 0019, as the earlier version
	// left it, with its calls.
	for _, stmt := range []string{
		`DROP TRIGGER ambiguous_waiting_update ON {s}.executions`,
		`DROP TRIGGER ambiguous_waiting_delete ON {s}.executions`,
		`DROP FUNCTION {s}.ambiguous_waiting_apply()`,
		`DROP TABLE {s}.ambiguous_waiting`,
		`DELETE FROM {s}.schema_migrations WHERE version = 19`,
	} {
		_, err := pool.Exec(ctx, replaceSchema(stmt, schema))
		require.NoError(t, err, stmt)
	}

	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	assertOneSetOfTables(t, schema)
	assertWaiting(t, s, 1, t0, "the call left ambiguous before the migration")

	ambiguousCall(t, s, "bob", "after", t0.Add(-2*time.Hour))
	assertWaiting(t, s, 2, t0.Add(-2*time.Hour), "and one after it")

	_, err = s.ResolveExecution(ctx, storage.Resolve{ExecutionID: before.ExecutionID, Outcome: storage.ExecutionCompleted,
		ResolvedBy: "ops", Now: t0, Response: []byte(`{"status":"completed"}`)})
	require.NoError(t, err)
	assertWaiting(t, s, 1, t0.Add(-2*time.Hour), "one resolved")
}

// TestAmbiguousWaitingForgetsADeletedExecution: an ambiguous execution an
// operator deletes by hand waits for nobody any more.
func TestAmbiguousWaitingForgetsADeletedExecution(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s, err := postgres.New(ctx, sharedPool(t), &postgres.Config{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	gone := ambiguousCall(t, s, "alice", "gone", t0.Add(-time.Hour))
	ambiguousCall(t, s, "alice", "kept", t0)
	assertWaiting(t, s, 2, t0.Add(-time.Hour), "two waiting")

	// Deleting executions by hand takes the setting Prune sets (migration
	// 0015).
	err = pgx.BeginFunc(ctx, sharedPool(t), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL toolgate.ledger_archive = 'on'`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, replaceSchema(`DELETE FROM {s}.executions WHERE id = $1`, schema), gone.ExecutionID)
		return err
	})
	require.NoError(t, err)
	assertWaiting(t, s, 1, t0, "the deleted one is no longer counted")
}

// TestNoExecutionsIndexNamesStatus: a finish changes an execution's status,
// so an index naming it, as a column or in its condition, would take
// every finish off the heap-only update (migrations 0009, 0014, 0019).
func TestNoExecutionsIndexNamesStatus(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s, err := postgres.New(t.Context(), sharedPool(t), &postgres.Config{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	rows, err := sharedPool(t).Query(t.Context(), `
		SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
		WHERE i.indrelid = to_regclass($1)
			AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attname = 'status'
				AND (a.attnum = ANY (i.indkey) OR pg_get_indexdef(i.indexrelid) ~ '\mstatus\M'))`,
		pgx.Identifier{schema, "executions"}.Sanitize())
	require.NoError(t, err)
	named, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Empty(t, named)
}
