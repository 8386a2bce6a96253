package sqlite

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/storagetest"
)

// TestReceiptStoredOnce: a file written while a finished call's response
// held its receipt (schema 0012) migrates forward. Its calls replay byte
// for byte, receipt included and not doubled; its ambiguous call, resolved
// after the upgrade, reads with the resolution's receipt alone; and a call
// finished after the upgrade stores its response without the receipt,
// which stays in its row only, while every read gives it with the receipt.
func TestReceiptStoredOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	db := migratedBefore(t, path, 13)

	at := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	signed := func(id uuid.UUID, seq int64) string {
		return fmt.Sprintf(`{"execution":%q,"prev":"","seq":%d}`, id, seq)
	}
	done, amb := uuid.New(), uuid.New()
	old := map[uuid.UUID][]byte{
		done: []byte(`{"call":"k-done","receipt":` + signed(done, 1) + `}`),
		amb:  []byte(`{"call":"k-amb","receipt":` + signed(amb, 2) + `}`),
	}
	for i, c := range []struct {
		id          uuid.UUID
		key, status string
	}{{done, "k-done", "completed"}, {amb, "k-amb", "ambiguous"}} {
		_, err := db.Exec(`INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged,
			response, created_at, finished_at, tool_slug, manifest_digest, price, fee, approval, fingerprint, lease_token, lease_until)
			VALUES (?, 'alice', 'tool-a', ?, ?, ?, 1100, ?, ?, ?, ?, 'slug-a', 'sha256:a', 1000, 100, 'digest', 'fp', ?, ?)`,
			idBytes(c.id), idBytes(uuid.New()), c.key, c.status, boolInt(c.status == "completed"), old[c.id],
			nanos(at), nanos(at.Add(time.Second)), idBytes(uuid.New()), nanos(at.Add(time.Minute)))
		require.NoError(t, err)
		// The chain's hashes are not checked here; only the bytes matter.
		_, err = db.Exec(`INSERT INTO receipts (principal, seq, execution_id, hash, signed) VALUES ('alice', ?, ?, ?, ?)`,
			i+1, idBytes(c.id), fmt.Sprint("sha256:", i+1), []byte(signed(c.id, int64(i+1))))
		require.NoError(t, err)
	}

	s, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()

	// Rows from before replay as they were stored.
	for id, resp := range old {
		e, err := s.GetExecution(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, string(resp), string(e.Response), "an old response reads as it was stored")
		rec, err := s.GetIdempotency(ctx, "alice", e.IdempotencyKey)
		require.NoError(t, err)
		assert.Equal(t, string(resp), string(rec.Response), "an old key replays byte for byte")
	}

	// The ambiguous call from before, resolved now, carries the
	// resolution's receipt and not its finish's.
	resolved, err := s.ResolveExecution(ctx, storage.Resolve{
		ExecutionID: amb, Outcome: storage.ExecutionCompleted, ResolvedBy: "approver", Now: at.Add(time.Hour),
		Response: []byte(`{"call":"k-amb","resolved":true}`), Seal: storagetest.TestSeal(amb, "", nil),
	})
	require.NoError(t, err)
	chain := receiptsOfInternal(t, s, "alice")
	require.Len(t, chain, 3)
	want := `{"call":"k-amb","resolved":true,"receipt":` + string(chain[2].Signed) + `}`
	assert.Equal(t, want, string(resolved.Response))
	rec, err := s.GetIdempotency(ctx, "alice", "k-amb")
	require.NoError(t, err)
	assert.Equal(t, want, string(rec.Response))

	// A call finished now: the receipt is in its row, not in the response.
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
		Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{"call":"k-new"}`), Now: at.Add(2 * time.Minute),
		Seal: storagetest.TestSeal(b.ExecutionID, "", nil),
	}))
	var stored []byte
	require.NoError(t, db.QueryRow(`SELECT response FROM executions WHERE id = ?`, idBytes(b.ExecutionID)).Scan(&stored))
	assert.Equal(t, `{"call":"k-new"}`, string(stored), "the response is stored without its receipt")
	chain = receiptsOfInternal(t, s, "alice")
	require.Len(t, chain, 4)
	want = `{"call":"k-new","receipt":` + string(chain[3].Signed) + `}`
	e, err := s.GetExecution(ctx, b.ExecutionID)
	require.NoError(t, err)
	assert.Equal(t, want, string(e.Response))
	rec, err = s.GetIdempotency(ctx, "alice", b.Key)
	require.NoError(t, err)
	assert.Equal(t, want, string(rec.Response))
	assert.Equal(t, 1, strings.Count(string(rec.Response), `"receipt":`))
}

func receiptsOfInternal(t *testing.T, s *Store, principal string) []storage.Receipt {
	t.Helper()
	got, err := s.ListReceipts(t.Context(), principal, 0, 100)
	require.NoError(t, err)
	return got
}
