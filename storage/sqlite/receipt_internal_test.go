package sqlite

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/storagetest"
)

// TestReceiptsMigrationChainsFromOne: a file written before receipts, with
// calls finished and one running across the upgrade, migrates forward; its
// old calls keep their responses and have no receipts, and the principal's
// chain starts at seq 1 with the first finish after the upgrade.
func TestReceiptsMigrationChainsFromOne(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	db := migratedBefore(t, path, 7)

	// Two calls finished and one running, as the store at 0006 wrote them.
	at := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	done := []uuid.UUID{uuid.New(), uuid.New()}
	running, lease := uuid.New(), uuid.New()
	type stmt struct {
		sql  string
		args []any
	}
	var stmts []stmt
	exec := func(id uuid.UUID, key, status string, charged int, resp []byte, finished any, ledger string) {
		stmts = append(stmts,
			stmt{`INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged,
				response, created_at, finished_at, tool_slug, manifest_digest, price, fee, approval)
				VALUES (?, 'alice', 'tool-a', ?, ?, ?, 1100, ?, ?, ?, ?, 'slug-a', 'sha256:a', 1000, 100, 'digest')`,
				[]any{idBytes(id), idBytes(uuid.New()), key, status, charged, resp, nanos(at), finished}},
			stmt{`INSERT INTO idempotency_records (principal, key, fingerprint, execution_id, lease_token, lease_until, finished, created_at)
				VALUES ('alice', ?, 'fp', ?, ?, ?, ?, ?)`,
				[]any{key, idBytes(id), idBytes(lease), nanos(at.Add(time.Hour)), boolInt(finished != nil), nanos(at)}},
			stmt{`INSERT INTO spend_ledger (execution_id, principal, tool_id, amount, state, created_at, minute, day)
				VALUES (?, 'alice', 'tool-a', 1100, ?, ?, ?, ?)`,
				[]any{idBytes(id), ledger, nanos(at), floorDiv(nanos(at), nanosPerMinute), floorDiv(nanos(at), nanosPerDay)}},
		)
	}
	for i, id := range done {
		exec(id, "k-done-"+strconv.Itoa(i), "completed", 1, []byte(`{"done":`+strconv.Itoa(i)+`}`), nanos(at.Add(time.Second)), "charged")
	}
	exec(running, "k-running", "running", 0, nil, nil, "reserved")
	for _, st := range stmts {
		_, err := db.Exec(st.sql, st.args...)
		require.NoError(t, err, st.sql)
	}

	s, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	all, err := migrations()
	require.NoError(t, err)
	versions := appliedVersions(t, db)
	assert.Equal(t, all[len(all)-1].Version, versions[len(versions)-1], "migrated to the newest")

	for i, id := range done {
		e, err := s.GetExecution(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, `{"done":`+strconv.Itoa(i)+`}`, string(e.Response), "an old response is kept as it was")
		rec, err := s.GetIdempotency(ctx, "alice", "k-done-"+strconv.Itoa(i))
		require.NoError(t, err)
		assert.Equal(t, e.Response, rec.Response)
	}
	got, err := s.ListReceipts(ctx, "alice", 0, 10)
	require.NoError(t, err)
	assert.Empty(t, got, "calls from before receipts have none")

	// The call running across the upgrade takes seq 1, the next call seq 2.
	require.NoError(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: "k-running", ExecutionID: running, LeaseToken: lease,
		Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{"late":true}`), Now: at.Add(time.Minute),
		Seal: storagetest.TestSeal(running, "late", nil),
	}))
	q := storage.Quote{
		ID: uuid.New(), Principal: "alice", ToolID: "tool-a", ToolSlug: "slug-a", ToolVersion: 1,
		ManifestDigest: "sha256:a", PriceUSD: decimal.RequireFromString("0.10"), FeeUSD: decimal.RequireFromString("0.01"),
		TotalUSD: decimal.RequireFromString("0.11"), CreatedAt: at, ExpiresAt: at.Add(time.Hour), State: storage.QuoteOpen,
	}
	require.NoError(t, s.CreateQuote(ctx, q))
	b := storage.Begin{
		Principal: "alice", Key: "k-new", Fingerprint: "fp", QuoteID: q.ID, ExecutionID: uuid.New(), ToolID: "tool-a",
		AmountUSD: q.TotalUSD, LeaseToken: uuid.New(), LeaseUntil: at.Add(time.Hour), Now: at.Add(time.Minute),
	}
	_, err = s.BeginExecution(ctx, b)
	require.NoError(t, err)
	require.NoError(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: b.Key, ExecutionID: b.ExecutionID, LeaseToken: b.LeaseToken,
		Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{}`), Now: at.Add(2 * time.Minute),
		Seal: storagetest.TestSeal(b.ExecutionID, "new", nil),
	}))

	chain, err := s.ListReceipts(ctx, "alice", 0, 10)
	require.NoError(t, err)
	require.Len(t, chain, 2)
	storagetest.AssertChain(t, "alice", chain)
	assert.Equal(t, []uuid.UUID{running, b.ExecutionID}, []uuid.UUID{chain[0].ExecutionID, chain[1].ExecutionID})
	e, err := s.GetExecution(ctx, running)
	require.NoError(t, err)
	assert.Equal(t, `{"late":true,"receipt":`+string(chain[0].Signed)+`}`, string(e.Response))
	rec, err := s.GetIdempotency(ctx, "alice", "k-new")
	require.NoError(t, err)
	assert.Equal(t, `{"receipt":`+string(chain[1].Signed)+`}`, string(rec.Response))
}
