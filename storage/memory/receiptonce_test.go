package memory

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/storagetest"
)

// TestReceiptHeldOnce: the store holds a sealed finish's response as
// given and its receipt once, the chain's bytes, and a read joins them;
// pruning the execution lets go of its receipt there but not in the chain.
func TestReceiptHeldOnce(t *testing.T) {
	s := New()
	ctx := t.Context()
	q := storage.Quote{
		ID: uuid.New(), Principal: "alice", ToolID: "tool-a",
		TotalUSD: decimal.RequireFromString("0.11"), CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute),
		State: storage.QuoteOpen,
	}
	require.NoError(t, s.CreateQuote(ctx, q))
	b := storage.Begin{
		Principal: "alice", Key: "k", Fingerprint: "k", QuoteID: q.ID, ExecutionID: uuid.New(),
		ToolID: q.ToolID, AmountUSD: q.TotalUSD, LeaseToken: uuid.New(), LeaseUntil: t0.Add(time.Minute), Now: t0,
	}
	_, err := s.BeginExecution(ctx, b)
	require.NoError(t, err)
	require.NoError(t, s.FinishExecution(ctx, storage.Finish{
		Principal: "alice", Key: "k", ExecutionID: b.ExecutionID, LeaseToken: b.LeaseToken,
		Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{"ok":true}`), Now: t0,
		Seal: storagetest.TestSeal(b.ExecutionID, "", nil),
	}))

	s.mu.Lock()
	held := string(s.executions[b.ExecutionID].Response)
	signed := s.receiptOf[b.ExecutionID]
	s.mu.Unlock()
	assert.Equal(t, `{"ok":true}`, held, "the response is held without its receipt")
	chain, err := s.ListReceipts(ctx, "alice", 0, 10)
	require.NoError(t, err)
	require.Len(t, chain, 1)
	assert.Same(t, &s.chains["alice"].receipts[0].Signed[0], &signed[0], "the execution's receipt is the chain's bytes")

	rec, err := s.GetIdempotency(ctx, "alice", "k")
	require.NoError(t, err)
	assert.Equal(t, `{"ok":true,"receipt":`+string(chain[0].Signed)+`}`, string(rec.Response))

	_, err = s.Prune(ctx, storage.Prune{IdempotencyBefore: t0.Add(time.Hour), Limit: 100})
	require.NoError(t, err)
	s.mu.Lock()
	_, kept := s.receiptOf[b.ExecutionID]
	s.mu.Unlock()
	assert.False(t, kept, "a pruned execution's receipt is let go of")
	chain, err = s.ListReceipts(ctx, "alice", 0, 10)
	require.NoError(t, err)
	assert.Len(t, chain, 1, "receipts are never pruned")
}
