package postgres_test

import (
	"context"
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
	"github.com/toolgate/toolgate/storage/storagetest"
)

// migrateSchemaTo applies the shipped migrations up to and including
// version last to schema, as a Store of that version would have, and
// records them, so that a Store opened next applies only the later ones.
func migrateSchemaTo(t *testing.T, schema string, last int) {
	t.Helper()
	ctx := t.Context()
	entries, err := os.ReadDir("migrations")
	require.NoError(t, err)
	tx, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL search_path TO `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `CREATE TABLE schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	for _, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		require.NoError(t, err)
		if v > last {
			continue
		}
		body, err := os.ReadFile(filepath.Join("migrations", e.Name()))
		require.NoError(t, err)
		_, err = tx.Exec(ctx, string(body))
		require.NoError(t, err, e.Name())
		_, err = tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, e.Name())
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit(ctx))
}

// oldCall is one call as the version before migration 0014 stored it: a
// used quote, an idempotency record, an execution and a ledger row, and for
// a finished one a receipt on the principal's chain.
type oldCall struct {
	key        string
	status     storage.ExecutionStatus
	leaseUntil time.Time
	amount     string

	quote, id, lease uuid.UUID
	response         []byte // as stored, receipt included; nil while running
}

// TestOneRowMigrationKeepsEveryCall: a schema at migration 0013 holding
// finished, running (lease live and lease ended) and ambiguous calls,
// migrated to 0014, still answers each key as before. A finished call
// replays byte for byte, a live run is in use, an abandoned one is taken
// over and finishes, an ambiguous one stays so until resolved, the limits
// measure the same spend, and the receipt chain goes on where it was.
func TestOneRowMigrationKeepsEveryCall(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	pool := sharedPool(t)
	migrateSchemaTo(t, schema, 13)

	at := t0
	now := at.Add(30 * time.Second) // after the migration
	calls := []*oldCall{
		{key: "k-done", status: storage.ExecutionCompleted, leaseUntil: at.Add(time.Minute), amount: "1.1000"},
		{key: "k-failed", status: storage.ExecutionFailed, leaseUntil: at.Add(time.Minute), amount: "0.2000"},
		{key: "k-live", status: storage.ExecutionRunning, leaseUntil: at.Add(time.Minute), amount: "0.1100"},
		{key: "k-expired", status: storage.ExecutionRunning, leaseUntil: at.Add(10 * time.Second), amount: "0.1300"},
		{key: "k-ambiguous", status: storage.ExecutionAmbiguous, leaseUntil: at.Add(time.Minute), amount: "0.1700"},
	}
	// The previous version's writes, statement for statement, through its
	// own tables: the ledger's triggers keep the rollups.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SET LOCAL search_path TO `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	seq, prev := int64(0), ""
	for _, c := range calls {
		c.quote, c.id, c.lease = uuid.New(), uuid.New(), uuid.New()
		finished := c.status != storage.ExecutionRunning
		ledger := "reserved"
		switch c.status {
		case storage.ExecutionCompleted:
			ledger = "charged"
		case storage.ExecutionFailed:
			ledger = "released"
		}
		var finishedAt *time.Time
		if finished {
			seq++
			sealed, err := storagetest.TestSeal(c.id, `{"status":"`+string(c.status)+`"}`, nil)(seq, prev)
			require.NoError(t, err)
			prev = sealed.Hash
			// Stored as a store of this version did: the response with
			// its receipt inside.
			c.response = storage.WithReceipt([]byte(`{"status":"`+string(c.status)+`"}`), sealed.Receipt)
			_, err = tx.Exec(ctx, `INSERT INTO receipts (principal, seq, execution_id, hash, signed)
				VALUES ('alice', $1, $2, $3, $4)`, seq, c.id, sealed.Hash, sealed.Receipt)
			require.NoError(t, err)
			done := at.Add(time.Second)
			finishedAt = &done
		}
		for _, stmt := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest, price_usd,
				fee_usd, total_usd, created_at, expires_at, state, used_by_key)
				VALUES ($1, 'alice', 'tool-a', 'slug-tool-a', 1, 'sha256:tool-a', $2, 0, $2, $3, $4, 'used', $5)`,
				[]any{c.quote, c.amount, at, at.Add(5 * time.Minute), c.key}},
			{`INSERT INTO idempotency_records (principal, key, fingerprint, execution_id, lease_token, lease_until,
				finished, created_at)
				VALUES ('alice', $1, $2, $3, $4, $5, $6, $7)`,
				[]any{c.key, "fp:" + c.key, c.id, c.lease, c.leaseUntil, finished, at}},
			{`INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount_usd, charged,
				response, created_at, finished_at, tool_slug, manifest_digest, price_usd, fee_usd, approval)
				VALUES ($1, 'alice', 'tool-a', $2, $3, $4, $5, $6, $7, $8, $9, 'slug-tool-a', 'sha256:tool-a', $5, 0, 'digest')`,
				[]any{c.id, c.quote, c.key, string(c.status), c.amount, c.status == storage.ExecutionCompleted,
					c.response, at, finishedAt}},
			{`INSERT INTO spend_ledger (execution_id, principal, tool_id, amount_usd, state, created_at)
				VALUES ($1, 'alice', 'tool-a', $2, $3, $4)`,
				[]any{c.id, c.amount, ledger, at}},
		} {
			_, err := tx.Exec(ctx, stmt.sql, stmt.args...)
			require.NoError(t, err, stmt.sql)
		}
	}
	require.NoError(t, tx.Commit(ctx))
	// The calls the limits count, from the ledger before migration 0015
	// and from spendEntries after, and the rollups.
	spendTables := func(entries string) string {
		var out string
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT (SELECT string_agg(format('%s %s %s %s %s', execution_id, principal, tool_id, amount_usd, state),
					',' ORDER BY execution_id) FROM `+entries+`)
				|| ' / ' || (SELECT string_agg(format('%s %s %s %s %s', principal, day, tool_id, calls, spend_usd),
					',' ORDER BY day, tool_id) FROM `+pgx.Identifier{schema, "spend_daily"}.Sanitize()+`)
				|| ' / ' || (SELECT string_agg(format('%s %s %s %s %s', principal, minute, tool_id, calls, spend_usd),
					',' ORDER BY minute, tool_id) FROM `+pgx.Identifier{schema, "spend_minute"}.Sanitize()+`)`).Scan(&out))
		return out
	}
	spendBefore := spendTables(pgx.Identifier{schema, "spend_ledger"}.Sanitize())

	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	assertOneSetOfTables(t, schema)
	assert.Equal(t, spendBefore, spendTables(spendEntries(schema)), "the same calls counted, and the rollups not touched")
	// Reserved or charged: 1.10 + 0.11 + 0.13 + 0.17, over five calls.
	assertUsed(t, s, "alice", "1.51", "5")
	storagetest.Chain(t, s, "alice")

	byKey := map[string]*oldCall{}
	for _, c := range calls {
		byKey[c.key] = c
	}
	retry := func(c *oldCall) storage.Begin {
		return storage.Begin{
			Principal: "alice", Key: c.key, Fingerprint: "fp:" + c.key, QuoteID: c.quote, ExecutionID: uuid.New(),
			ToolID: "tool-a", AmountUSD: dec(c.amount), LeaseToken: uuid.New(), LeaseUntil: now.Add(time.Minute), Now: now,
		}
	}

	// Finished calls, ambiguous included: the key is claimed, and its
	// record replays the stored response byte for byte.
	for _, key := range []string{"k-done", "k-failed", "k-ambiguous"} {
		c := byKey[key]
		_, err := s.BeginExecution(ctx, retry(c))
		assert.ErrorIs(t, err, storage.ErrIdempotencyConflict, key)
		rec, err := s.GetIdempotency(ctx, "alice", key)
		require.NoError(t, err, key)
		assert.Equal(t, storage.IdempotencyRecord{
			Principal: "alice", Key: key, Fingerprint: "fp:" + key, ExecutionID: c.id, LeaseToken: c.lease,
			LeaseUntil: c.leaseUntil, Finished: true, Response: c.response, CreatedAt: at,
		}, rec, key)
	}

	// A run whose lease is live is in use: not finished, not taken over.
	live := byKey["k-live"]
	_, err = s.BeginExecution(ctx, retry(live))
	assert.ErrorIs(t, err, storage.ErrIdempotencyConflict)
	rec, err := s.GetIdempotency(ctx, "alice", live.key)
	require.NoError(t, err)
	assert.False(t, rec.Finished)
	assert.True(t, rec.LeaseUntil.After(now), "the lease is still live")
	assert.Equal(t, live.lease, rec.LeaseToken)
	// Its run, begun before the upgrade, still finishes under its lease.
	require.NoError(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: live.key, ExecutionID: live.id, LeaseToken: live.lease,
		Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{"live":true}`), Now: now,
		Seal: storagetest.TestSeal(live.id, `{"live":true}`, nil),
	}))

	// A run whose lease ended is taken over, keeps its execution and its
	// reservation, and only the new lease can finish it.
	expired := byKey["k-expired"]
	b := retry(expired)
	res, err := s.BeginExecution(ctx, b)
	require.NoError(t, err)
	assert.True(t, res.TookOver)
	assert.Equal(t, expired.id, res.Execution.ID)
	assert.Equal(t, storage.ExecutionRunning, res.Execution.Status)
	assert.ErrorIs(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: expired.key, ExecutionID: expired.id, LeaseToken: expired.lease,
		Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{}`), Now: now,
	}), storage.ErrLeaseLost, "the abandoned run's lease is gone")
	require.NoError(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: expired.key, ExecutionID: expired.id, LeaseToken: b.LeaseToken,
		Status: storage.ExecutionFailed, Response: []byte(`{"expired":true}`), Now: now,
		Seal: storagetest.TestSeal(expired.id, `{"expired":true}`, nil),
	}))
	rec, err = s.GetIdempotency(ctx, "alice", expired.key)
	require.NoError(t, err)
	assert.True(t, rec.Finished)
	assert.Regexp(t, `^\{"expired":true,"receipt":\{"execution":"`+expired.id.String()+`","prev":"sha256:[0-9a-f]+","seq":5\}\}$`, string(rec.Response))
	// Charged 1.10 + 0.11, the ambiguous 0.17 still reserved; the takeover
	// counted no second call.
	assertUsed(t, s, "alice", "1.38", "5")

	// The ambiguous call stays so, and is resolved once.
	amb := byKey["k-ambiguous"]
	e, err := s.GetExecution(ctx, amb.id)
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionAmbiguous, e.Status)
	resolve := storage.Resolve{
		ExecutionID: amb.id, Outcome: storage.ExecutionCompleted, ResolvedBy: "approver", Now: now,
		Response: []byte(`{"resolved":true}`), Seal: storagetest.TestSeal(amb.id, `{"resolved":true}`, nil),
	}
	resolved, err := s.ResolveExecution(ctx, resolve)
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionCompleted, resolved.Status)
	_, err = s.ResolveExecution(ctx, resolve)
	assert.ErrorIs(t, err, storage.ErrAlreadyResolved)
	assertUsed(t, s, "alice", "1.38", "5")

	chain := storagetest.Chain(t, s, "alice")
	require.Len(t, chain, 6, "three receipts from before the upgrade, three after")
	assert.Equal(t, amb.id, chain[5].ExecutionID)
	// Its key replays the resolution with the resolution's receipt alone,
	// not the one its response held from before the upgrade.
	rec, err = s.GetIdempotency(ctx, "alice", amb.key)
	require.NoError(t, err)
	assert.Equal(t, `{"resolved":true,"receipt":`+string(chain[5].Signed)+`}`, string(rec.Response))
	assert.Equal(t, string(rec.Response), string(resolved.Response))

	// The old table's name still reads the keys, and refuses writes, which
	// an instance of an earlier version left running would attempt.
	view := pgx.Identifier{schema, "idempotency_records"}.Sanitize()
	var finished int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+view+` WHERE finished`).Scan(&finished))
	assert.Equal(t, 5, finished)
	_, err = pool.Exec(ctx, `UPDATE `+view+` SET lease_until = lease_until`)
	assert.ErrorContains(t, err, "read-only")
	_, err = pool.Exec(ctx, `INSERT INTO `+view+` (principal, key, fingerprint, execution_id, lease_token,
		lease_until, finished, created_at) VALUES ('alice', 'k-old', 'fp', $1, $1, $2, false, $2)`, uuid.New(), now)
	assert.ErrorContains(t, err, "read-only")

	// Prune frees the keys of the finished calls with their executions.
	pruned, err := s.Prune(context.WithoutCancel(ctx), storage.Prune{IdempotencyBefore: now.Add(time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, 5, pruned.Idempotency)
	_, err = s.GetIdempotency(ctx, "alice", "k-done")
	assert.ErrorIs(t, err, storage.ErrNotFound)
}
