package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/storage/storagetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// receiptsOf reads principal's whole chain through s, page by page.
func receiptsOf(t *testing.T, s *sqlite.Store, principal string, page int) []storage.Receipt {
	t.Helper()
	var all []storage.Receipt
	after := int64(0)
	for {
		got, err := s.ListReceipts(t.Context(), principal, after, page)
		require.NoError(t, err)
		if len(got) == 0 {
			return all
		}
		require.LessOrEqual(t, len(got), page)
		all = append(all, got...)
		after = got[len(got)-1].Seq
	}
}

// TestTwoStoresOneChain: two Stores on one file, as two gateway processes
// on one machine, each with a hundred callers finishing calls of the same
// principal at once. Neither Store knows what the other wrote; the head
// read in each write, under the file's write lock, keeps one gapless chain.
func TestTwoStoresOneChain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	stores := []*sqlite.Store{openStore(t, path), openStore(t, path)}
	ctx := t.Context()

	const n = 200
	begins := make([]storage.Begin, n)
	for i := range begins {
		s := stores[i%2]
		q := quoteFor("alice", "tool-a", "0.11", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		begins[i] = beginFor(q, fmt.Sprint("key-", i), t0)
		_, err := s.BeginExecution(ctx, begins[i])
		require.NoError(t, err)
	}
	errs := make([]error, n)
	batches := watchBatches(stores[0], stores[1])
	race(n, func(i int) {
		f := finishFor(begins[i], storage.ExecutionCompleted, `{"done":true}`, t0.Add(time.Second))
		f.Seal = storagetest.TestSeal(begins[i].ExecutionID, "done", nil)
		errs[i] = stores[i%2].FinishExecution(ctx, f)
	})
	for _, err := range errs {
		require.NoError(t, err)
	}

	assert.Greater(t, batches.n.Load(), int64(1), "finishes of one principal shared a transaction")
	chain := receiptsOf(t, stores[0], "alice", 64)
	require.Len(t, chain, n)
	storagetest.AssertChain(t, "alice", chain)
	assert.Equal(t, chain, receiptsOf(t, stores[1], "alice", toolgatetype.MaxReceiptPage), "both Stores read one chain")

	keys := make(map[uuid.UUID]string, n)
	for _, b := range begins {
		keys[b.ExecutionID] = b.Key
	}
	for _, r := range chain {
		key, ok := keys[r.ExecutionID]
		require.True(t, ok, "receipt %d is of one of the calls", r.Seq)
		delete(keys, r.ExecutionID) // one receipt each
		want := `{"done":true,"receipt":` + string(r.Signed) + `}`
		e, err := stores[int(r.Seq)%2].GetExecution(ctx, r.ExecutionID)
		require.NoError(t, err)
		assert.Equal(t, want, string(e.Response), "the response is read with its own receipt")
		rec, err := stores[int(r.Seq+1)%2].GetIdempotency(ctx, "alice", key)
		require.NoError(t, err)
		assert.Equal(t, want, string(rec.Response))
	}
	assert.Empty(t, keys, "every call has its receipt")
}

// TestPruneKeepsReceipts: Prune deletes an old call's execution and
// record, and never its receipt: a chain is verified from its start.
func TestPruneKeepsReceipts(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	q := quoteFor("alice", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, q))
	b := beginFor(q, "key-1", t0)
	_, err := s.BeginExecution(ctx, b)
	require.NoError(t, err)
	f := finishFor(b, storage.ExecutionCompleted, "done", t0.Add(time.Second))
	f.Seal = storagetest.TestSeal(b.ExecutionID, "done", nil)
	require.NoError(t, s.FinishExecution(ctx, f))

	later := t0.Add(365 * 24 * time.Hour)
	res, err := s.Prune(ctx, storage.Prune{
		IdempotencyBefore: later, QuotesBefore: later, LedgerBefore: later, ApprovalRequestsBefore: later,
		Limit: pruneAll,
	})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Idempotency)
	_, err = s.GetExecution(ctx, b.ExecutionID)
	require.ErrorIs(t, err, storage.ErrNotFound)

	chain := receiptsOf(t, s, "alice", 10)
	require.Len(t, chain, 1)
	storagetest.AssertChain(t, "alice", chain)
	assert.Equal(t, b.ExecutionID, chain[0].ExecutionID)
}
