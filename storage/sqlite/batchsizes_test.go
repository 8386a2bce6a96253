package sqlite_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// The writer tells how many writes each of its transactions committed
// together: every write is counted once, and writes that waited at the
// same moment shared a transaction.
func TestWriterReportsItsBatches(t *testing.T) {
	s := newStore(t)
	var writes, batches, largest atomic.Int64
	s.ObserveBatches(func(op string, n int) {
		assert.Equal(t, "write", op)
		writes.Add(int64(n))
		batches.Add(1)
		for {
			m := largest.Load()
			if int64(n) <= m || largest.CompareAndSwap(m, int64(n)) {
				break
			}
		}
	})
	const n = 200
	at := time.Date(2030, 3, 15, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: "tool-a", ToolSlug: "slug-a",
				TotalUSD: decimal.RequireFromString("0.01"), CreatedAt: at, ExpiresAt: at.Add(time.Minute), State: storage.QuoteOpen}
			require.NoError(t, s.CreateQuote(t.Context(), q), "quote %d", i)
		}()
	}
	wg.Wait()
	assert.EqualValues(t, n, writes.Load(), "each write counted once")
	assert.Less(t, batches.Load(), int64(n), "some writes shared a transaction")
	t.Logf("%d writes in %d transactions, at most %d in one", writes.Load(), batches.Load(), largest.Load())
}

// largestBatches records the largest transaction each store's writer
// commits from now on, for tests that show their racers' writes were
// shared.
type largestBatches struct{ n atomic.Int64 }

func watchBatches(stores ...interface {
	ObserveBatches(func(string, int))
}) *largestBatches {
	l := &largestBatches{}
	for _, s := range stores {
		s.ObserveBatches(func(_ string, n int) {
			for {
				m := l.n.Load()
				if int64(n) <= m || l.n.CompareAndSwap(m, int64(n)) {
					return
				}
			}
		})
	}
	return l
}
