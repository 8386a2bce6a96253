package sqlite

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/internal/sqlstore"
)

// Exported for the tests of package sqlite_test.
var (
	ChainSeal  = chainSeal
	CheckChain = checkChain
)

// chainSeal is a Seal whose receipt says which execution, seq and prev it
// was sealed with, as storagetest's does, and whose response is resp with
// the seq after it.
func chainSeal(id uuid.UUID, resp string) storage.Seal {
	return func(seq int64, prev string) (storage.Sealed, error) {
		r := fmt.Sprintf(`{"execution":%q,"prev":%q,"seq":%d}`, id, prev, seq)
		sum := sha256.Sum256([]byte(r))
		return storage.Sealed{
			Receipt:  []byte(r),
			Hash:     "sha256:" + hex.EncodeToString(sum[:]),
			Response: []byte(resp + " receipt " + strconv.FormatInt(seq, 10)),
		}, nil
	}
}

// checkChain requires receipts to be principal's seqs 1 to n, each sealed
// by chainSeal on the hash of the one before.
func checkChain(t *testing.T, principal string, receipts []storage.Receipt) {
	t.Helper()
	prev := ""
	for i, r := range receipts {
		seq := int64(i + 1)
		require.Equal(t, seq, r.Seq, "seqs are gapless from 1")
		require.Equal(t, principal, r.Principal)
		require.Equal(t, fmt.Sprintf(`{"execution":%q,"prev":%q,"seq":%d}`, r.ExecutionID, prev, seq), string(r.Signed),
			"receipt %d was sealed on the one before it", seq)
		sum := sha256.Sum256(r.Signed)
		require.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), r.Hash)
		prev = r.Hash
	}
}

// TestReceiptsMigrationChainsFromOne: a file written before receipts, with
// calls finished and one running across the upgrade, migrates forward; its
// old calls keep their responses and have no receipts, and the principal's
// chain starts at seq 1 with the first finish after the upgrade.
func TestReceiptsMigrationChainsFromOne(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	all, err := migrations()
	require.NoError(t, err)
	var before []sqlstore.Migration
	for _, m := range all {
		if m.Version < 7 {
			before = append(before, m)
		}
	}
	require.Len(t, before, 6)

	db := rawDB(t, path)
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	require.NoError(t, applyMigrations(t.Context(), conn, before))
	require.NoError(t, conn.Close())

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
	versions := appliedVersions(t, db)
	assert.Equal(t, 7, versions[len(versions)-1])

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
		Seal: chainSeal(running, "late"),
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
		Seal: chainSeal(b.ExecutionID, "new"),
	}))

	chain, err := s.ListReceipts(ctx, "alice", 0, 10)
	require.NoError(t, err)
	require.Len(t, chain, 2)
	checkChain(t, "alice", chain)
	assert.Equal(t, []uuid.UUID{running, b.ExecutionID}, []uuid.UUID{chain[0].ExecutionID, chain[1].ExecutionID})
	e, err := s.GetExecution(ctx, running)
	require.NoError(t, err)
	assert.Equal(t, "late receipt 1", string(e.Response))
	rec, err := s.GetIdempotency(ctx, "alice", "k-new")
	require.NoError(t, err)
	assert.Equal(t, "new receipt 2", string(rec.Response))
}
