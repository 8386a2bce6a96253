package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// TestAmbiguousMigrationKeepsExecutions: the migration that lets an
// execution be ambiguous builds the executions table again. A file written
// before it keeps every execution, its index and its response, and a call
// running across the upgrade can still end ambiguous and be resolved.
func TestAmbiguousMigrationKeepsExecutions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	db := migratedBefore(t, path, 5)

	at := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	done, running, lease := uuid.New(), uuid.New(), uuid.New()
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged,
			response, created_at, finished_at, tool_slug, manifest_digest, price, fee, approval)
			VALUES (?, 'alice', 'tool-a', ?, 'k-done', 'completed', 1100, 1, ?, ?, ?, 'slug-a', 'sha256:a', 1000, 100, 'digest')`,
			[]any{done[:], idBytes(uuid.New()), []byte(`{"done":true}`), nanos(at), nanos(at.Add(time.Second))}},
		{`INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged,
			created_at, tool_slug, manifest_digest, price, fee, approval)
			VALUES (?, 'alice', 'tool-a', ?, 'k-running', 'running', 1100, 0, ?, 'slug-a', 'sha256:a', 1100, 0, 'digest')`,
			[]any{running[:], idBytes(uuid.New()), nanos(at.Add(time.Minute))}},
		{`INSERT INTO idempotency_records (principal, key, fingerprint, execution_id, lease_token, lease_until, finished, created_at)
			VALUES ('alice', 'k-running', 'fp', ?, ?, ?, 0, ?)`,
			[]any{running[:], lease[:], nanos(at.Add(2 * time.Minute)), nanos(at.Add(time.Minute))}},
		{`INSERT INTO spend_ledger (execution_id, principal, tool_id, amount, state, created_at, minute, day)
			VALUES (?, 'alice', 'tool-a', 1100, 'reserved', ?, ?, ?)`,
			[]any{running[:], nanos(at.Add(time.Minute)), floorDiv(nanos(at.Add(time.Minute)), nanosPerMinute), floorDiv(nanos(at), nanosPerDay)}},
	} {
		_, err := db.Exec(stmt.sql, stmt.args...)
		require.NoError(t, err, stmt.sql)
	}

	s, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()

	e, err := s.GetExecution(ctx, done)
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionCompleted, e.Status)
	assert.Equal(t, []byte(`{"done":true}`), e.Response)
	assert.Equal(t, "slug-a", e.ToolSlug)
	assert.Nil(t, e.Resolution)

	var indexed int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'executions_principal_created'`).Scan(&indexed))
	assert.Equal(t, 1, indexed, "the listing's index is built again")

	require.NoError(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: "k-running", ExecutionID: running, LeaseToken: lease,
		Status: storage.ExecutionAmbiguous, Response: []byte(`{"status":"ambiguous"}`), Now: at.Add(90 * time.Second),
	}))
	listed, err := s.ListExecutions(ctx, storage.ExecutionQuery{Principals: []string{"alice"}, Status: storage.ExecutionAmbiguous, Limit: 10})
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, running, listed[0].ID)

	resolved, err := s.ResolveExecution(ctx, storage.Resolve{
		ExecutionID: running, Outcome: storage.ExecutionFailed, ResolvedBy: "approver", Now: at.Add(time.Hour),
		Response: []byte(`{"status":"failed"}`),
	})
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionFailed, resolved.Status)
	used, err := s.MeasureLimits(ctx, "alice", []storage.Limit{{Measure: storage.MeasureSpend}})
	require.NoError(t, err)
	assert.True(t, used[0].IsZero(), "released: %s", used[0])
	assertRollupsExact(t, db, "after the resolution")
}
