package postgres_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
)

// TestAmbiguousMigrationUpgrades: a schema migrated before executions could
// be ambiguous keeps its executions, and a call running across the upgrade
// can end ambiguous, keep its reservation and be resolved.
func TestAmbiguousMigrationUpgrades(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	pool := sharedPool(t)
	ident := pgx.Identifier{schema}.Sanitize()

	// The schema as the migrations before this one left it.
	entries, err := os.ReadDir("migrations")
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL search_path TO `+ident)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `CREATE TABLE schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	for _, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		require.NoError(t, err)
		if v >= 11 {
			continue
		}
		body, err := os.ReadFile(filepath.Join("migrations", e.Name()))
		require.NoError(t, err)
		_, err = tx.Exec(ctx, string(body))
		require.NoError(t, err, e.Name())
		_, err = tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, e.Name())
		require.NoError(t, err)
	}

	at := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	done, running, lease := uuid.New(), uuid.New(), uuid.New()
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount_usd, charged,
			response, created_at, finished_at, tool_slug, manifest_digest, price_usd, fee_usd, approval)
			VALUES ($1, 'alice', 'tool-a', $2, 'k-done', 'completed', 1.10, true, $3, $4, $4, 'slug-a', 'sha256:a', 1, 0.10, 'digest')`,
			[]any{done, uuid.New(), []byte(`{"done":true}`), at}},
		{`INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount_usd, charged,
			created_at, tool_slug, manifest_digest, price_usd, fee_usd, approval)
			VALUES ($1, 'alice', 'tool-a', $2, 'k-running', 'running', 0.11, false, $3, 'slug-a', 'sha256:a', 0.11, 0, 'digest')`,
			[]any{running, uuid.New(), at}},
		{`INSERT INTO idempotency_records (principal, key, fingerprint, execution_id, lease_token, lease_until, finished, created_at)
			VALUES ('alice', 'k-running', 'fp', $1, $2, $3, false, $4)`,
			[]any{running, lease, at.Add(time.Minute), at}},
		{`INSERT INTO spend_ledger (execution_id, principal, tool_id, amount_usd, state, created_at)
			VALUES ($1, 'alice', 'tool-a', 0.11, 'reserved', $2)`,
			[]any{running, at}},
	} {
		_, err := tx.Exec(ctx, stmt.sql, stmt.args...)
		require.NoError(t, err, stmt.sql)
	}
	require.NoError(t, tx.Commit(ctx))

	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	assertOneSetOfTables(t, schema)

	e, err := s.GetExecution(ctx, done)
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionCompleted, e.Status)
	assert.Equal(t, []byte(`{"done":true}`), e.Response)
	assert.Nil(t, e.Resolution)

	require.NoError(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: "k-running", ExecutionID: running, LeaseToken: lease,
		Status: storage.ExecutionAmbiguous, Response: []byte(`{"status":"ambiguous"}`), Now: at.Add(time.Second),
	}))
	day := storage.Limit{Measure: storage.MeasureSpend, Since: time.Date(2030, time.March, 15, 0, 0, 0, 0, time.UTC)}
	used, err := s.MeasureLimits(ctx, "alice", []storage.Limit{day})
	require.NoError(t, err)
	assert.Equal(t, "0.11", used[0].StringFixed(2), "the ambiguous call's reservation counts")

	resolved, err := s.ResolveExecution(ctx, storage.Resolve{
		ExecutionID: running, Outcome: storage.ExecutionFailed, ResolvedBy: "approver", Now: at.Add(time.Hour),
		Response: []byte(`{"status":"failed"}`),
	})
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionFailed, resolved.Status)
	used, err = s.MeasureLimits(ctx, "alice", []storage.Limit{day})
	require.NoError(t, err)
	assert.True(t, used[0].IsZero(), "released: %s", used[0])
}
