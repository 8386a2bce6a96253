package sqlite

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/storagetest"
)

// TestOneRowMigrationKeepsCalls: a file written before an admitted call
// became one row (schema 0007: idempotency records beside executions), with
// calls finished, running under a live lease, running under a lease that
// has ended and ambiguous, migrates forward with every call where it was.
// A finished call replays byte for byte under its key, the live run holds
// its key, the abandoned one is taken over (on its quote, which the
// quotes' new table keeps) and finishes on the chain its
// principal's receipts make, the ambiguous one is resolved, and the ledger
// counts what it counted.
func TestOneRowMigrationKeepsCalls(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	db := migratedBefore(t, path, 8)

	at := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	type call struct {
		key, status string
		id, lease   uuid.UUID
		quote       uuid.UUID
		leaseUntil  time.Time
		response    []byte // nil while running
		ledger      string
	}
	calls := []*call{
		{key: "k-done-1", status: "completed", ledger: "charged"},
		{key: "k-done-2", status: "failed", ledger: "released"},
		{key: "k-live", status: "running", ledger: "reserved", leaseUntil: at.Add(time.Hour)},
		{key: "k-abandoned", status: "running", ledger: "reserved", leaseUntil: at.Add(time.Minute)},
		{key: "k-ambiguous", status: "ambiguous", ledger: "reserved"},
	}
	// The finished calls' receipts chain as the store at 0007 sealed them:
	// seq 1 and 2, the second on the first's hash.
	prev, seq := "", int64(0)
	for _, c := range calls {
		c.id, c.lease, c.quote = uuid.New(), uuid.New(), uuid.New()
		if c.leaseUntil.IsZero() {
			c.leaseUntil = at.Add(time.Minute)
		}
		var finishedAt any
		if c.status != "running" {
			finishedAt = nanos(at.Add(time.Second))
			c.response = fmt.Appendf(nil, `{"call":%q,"bytes":"\u00e9\n"}`, c.key)
		}
		stmts := []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest, price, fee, total,
				created_at, expires_at, state, used_by_key)
				VALUES (?, 'alice', 'tool-a', 'slug-a', 1, 'sha256:a', 1000, 100, 1100, ?, ?, 'used', ?)`,
				[]any{idBytes(c.quote), nanos(at), nanos(at.Add(time.Hour)), c.key}},
			{`INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged,
				response, created_at, finished_at, tool_slug, manifest_digest, price, fee, approval)
				VALUES (?, 'alice', 'tool-a', ?, ?, ?, 1100, ?, ?, ?, ?, 'slug-a', 'sha256:a', 1000, 100, 'digest')`,
				[]any{idBytes(c.id), idBytes(c.quote), c.key, c.status, boolInt(c.ledger == "charged"), c.response, nanos(at), finishedAt}},
			{`INSERT INTO idempotency_records (principal, key, fingerprint, execution_id, lease_token, lease_until, finished, created_at)
				VALUES ('alice', ?, ?, ?, ?, ?, ?, ?)`,
				[]any{c.key, "fp-" + c.key, idBytes(c.id), idBytes(c.lease), nanos(c.leaseUntil), boolInt(c.status != "running"), nanos(at)}},
			{`INSERT INTO spend_ledger (execution_id, principal, tool_id, amount, state, created_at, minute, day)
				VALUES (?, 'alice', 'tool-a', 1100, ?, ?, ?, ?)`,
				[]any{idBytes(c.id), c.ledger, nanos(at), floorDiv(nanos(at), nanosPerMinute), floorDiv(nanos(at), nanosPerDay)}},
		}
		if c.status == "completed" || c.status == "failed" {
			seq++
			signed := fmt.Sprintf(`{"execution":%q,"prev":%q,"seq":%d}`, c.id, prev, seq)
			sum := sha256.Sum256([]byte(signed))
			hash := "sha256:" + hex.EncodeToString(sum[:])
			stmts = append(stmts, struct {
				sql  string
				args []any
			}{`INSERT INTO receipts (principal, seq, execution_id, hash, signed) VALUES ('alice', ?, ?, ?, ?)`,
				[]any{seq, idBytes(c.id), hash, []byte(signed)}})
			prev = hash
		}
		for _, st := range stmts {
			_, err := db.Exec(st.sql, st.args...)
			require.NoError(t, err, st.sql)
		}
	}
	rollups := func() (daily, minute [2]int64) {
		require.NoError(t, db.QueryRow(`SELECT sum(calls), sum(spend) FROM spend_daily`).Scan(&daily[0], &daily[1]))
		require.NoError(t, db.QueryRow(`SELECT sum(calls), sum(spend) FROM spend_minute`).Scan(&minute[0], &minute[1]))
		return daily, minute
	}
	dailyBefore, minuteBefore := rollups()

	s, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	all, err := migrations()
	require.NoError(t, err)
	versions := appliedVersions(t, db)
	require.Equal(t, all[len(all)-1].Version, versions[len(versions)-1], "migrated to the newest")
	var tables int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'idempotency_records'`).Scan(&tables))
	assert.Zero(t, tables, "the records live in their executions now")
	// The quotes are copied into their rowid table (0009) as they were.
	for _, c := range calls {
		q, err := s.GetQuote(ctx, c.quote)
		require.NoError(t, err)
		assert.Equal(t, storage.QuoteUsed, q.State)
		assert.Equal(t, c.key, q.UsedByKey)
		assert.Equal(t, "0.1100", q.TotalUSD.StringFixed(4))
		assert.True(t, q.ExpiresAt.Equal(at.Add(time.Hour)))
	}

	// The ledger counts what it counted: charged, released and reserved alike.
	dailyAfter, minuteAfter := rollups()
	assert.Equal(t, dailyBefore, dailyAfter)
	assert.Equal(t, minuteBefore, minuteAfter)
	assertRollupsExact(t, db, "after the migrations")
	spend := []storage.Limit{{Measure: storage.MeasureSpend}, {Measure: storage.MeasureCalls}}
	used, err := s.MeasureLimits(ctx, "alice", spend)
	require.NoError(t, err)
	assert.Equal(t, "0.4400", used[0].StringFixed(4), "one charged and three reserved calls of 0.11")
	assert.Equal(t, "5", used[1].String())

	retry := func(c *call, now time.Time) (storage.BeginResult, error) {
		return s.BeginExecution(ctx, storage.Begin{
			Principal: "alice", Key: c.key, Fingerprint: "fp-" + c.key, QuoteID: c.quote, ExecutionID: uuid.New(),
			ToolID: "tool-a", AmountUSD: decimal.RequireFromString("0.11"), LeaseToken: uuid.New(),
			LeaseUntil: now.Add(time.Hour), Now: now, Limits: spend,
		})
	}
	now := at.Add(2 * time.Minute) // the abandoned lease has ended, the live one has not

	// A finished call replays byte for byte under its key, and is not run again.
	for _, c := range calls[:2] {
		rec, err := s.GetIdempotency(ctx, "alice", c.key)
		require.NoError(t, err)
		assert.True(t, rec.Finished, c.key)
		assert.Equal(t, c.id, rec.ExecutionID, c.key)
		assert.Equal(t, c.lease, rec.LeaseToken, c.key)
		assert.Equal(t, "fp-"+c.key, rec.Fingerprint, c.key)
		assert.True(t, rec.CreatedAt.Equal(at), c.key)
		assert.Equal(t, c.response, rec.Response, "%s replays byte for byte", c.key)
		_, err = retry(c, now)
		require.ErrorIs(t, err, storage.ErrIdempotencyConflict, c.key)
	}

	// The live run holds its key; its own lease can still finish it.
	live := calls[2]
	rec, err := s.GetIdempotency(ctx, "alice", live.key)
	require.NoError(t, err)
	assert.False(t, rec.Finished)
	assert.Nil(t, rec.Response)
	assert.True(t, rec.LeaseUntil.Equal(live.leaseUntil))
	_, err = retry(live, now)
	require.ErrorIs(t, err, storage.ErrIdempotencyConflict, "a live lease keeps its key busy")

	// The abandoned run is taken over: the same execution, under a new lease
	// that the old one can no longer finish, on its reservation.
	abandoned := calls[3]
	res, err := retry(abandoned, now)
	require.NoError(t, err)
	assert.True(t, res.TookOver)
	assert.Equal(t, abandoned.id, res.Execution.ID)
	assert.Equal(t, storage.ExecutionRunning, res.Execution.Status)
	newLease, err := s.GetIdempotency(ctx, "alice", abandoned.key)
	require.NoError(t, err)
	require.NotEqual(t, abandoned.lease, newLease.LeaseToken)
	finish := storage.Finish{
		Principal: "alice", Key: abandoned.key, ExecutionID: abandoned.id, LeaseToken: abandoned.lease,
		Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{}`), Now: now,
		Seal: storagetest.TestSeal(abandoned.id, "taken over", nil),
	}
	require.ErrorIs(t, s.FinishExecution(ctx, finish), storage.ErrLeaseLost, "the old lease is lost")
	finish.LeaseToken = newLease.LeaseToken
	require.NoError(t, s.FinishExecution(ctx, finish))
	rec, err = s.GetIdempotency(ctx, "alice", abandoned.key)
	require.NoError(t, err)
	assert.True(t, rec.Finished)
	assert.Equal(t, fmt.Sprintf(`{"receipt":{"execution":%q,"prev":%q,"seq":3}}`, abandoned.id, prev), string(rec.Response),
		"sealed on the chain from before the upgrade")

	// The live run finishes under its own lease.
	require.NoError(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: live.key, ExecutionID: live.id, LeaseToken: live.lease,
		Status: storage.ExecutionFailed, Response: []byte(`{"late":true}`), Now: now,
		Seal: storagetest.TestSeal(live.id, "late", nil),
	}))

	// The ambiguous call stays resolvable, and its key answers with the
	// resolution once resolved.
	amb := calls[4]
	rec, err = s.GetIdempotency(ctx, "alice", amb.key)
	require.NoError(t, err)
	assert.True(t, rec.Finished)
	assert.Equal(t, amb.response, rec.Response)
	pruned, err := s.Prune(ctx, storage.Prune{IdempotencyBefore: at.Add(time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, 4, pruned.Idempotency, "every finished call goes, the unresolved one stays")
	resolved, err := s.ResolveExecution(ctx, storage.Resolve{
		ExecutionID: amb.id, Outcome: storage.ExecutionCompleted, ResolvedBy: "approver", Now: now,
		Response: []byte(`{"resolved":true}`), Seal: storagetest.TestSeal(amb.id, "resolved", nil),
	})
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionCompleted, resolved.Status)
	rec, err = s.GetIdempotency(ctx, "alice", amb.key)
	require.NoError(t, err)
	assert.Contains(t, string(rec.Response), `{"resolved":true,"receipt":{"execution":"`+amb.id.String())
	assert.Contains(t, string(rec.Response), `"seq":5}}`)

	// Charged: the first call, the taken-over one and the resolved one;
	// released: the failed ones. Every receipt verifies on one chain.
	used, err = s.MeasureLimits(ctx, "alice", spend)
	require.NoError(t, err)
	assert.Equal(t, "0.3300", used[0].StringFixed(4))
	assert.Equal(t, "5", used[1].String())
	assertRollupsExact(t, db, "after the finishes, the prune and the resolution")
	chain := storagetest.Chain(t, s, "alice")
	require.Len(t, chain, 5)
	assert.Equal(t, []uuid.UUID{calls[0].id, calls[1].id, abandoned.id, live.id, amb.id},
		[]uuid.UUID{chain[0].ExecutionID, chain[1].ExecutionID, chain[2].ExecutionID, chain[3].ExecutionID, chain[4].ExecutionID})
}
