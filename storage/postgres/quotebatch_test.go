package postgres_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetype"
)

// quoteReads are the reads and the insert of a quote as the gateway asks
// for them, with q's principal's open quotes capped at max (0: none).
func quoteReads(q storage.Quote, max int) storage.Reads {
	return storage.Reads{Principal: q.Principal, Approval: true, ToolID: q.ToolID, SpendControls: true,
		CreateQuote: &q, MaxOpenQuotes: max}
}

// holdQuotes fills every room s has for quote batches with capped quotes
// that wait for their principals' quote locks, held by another session,
// so that the quotes made next wait and go together as one batch once
// release is called. release waits for the held quotes to end.
func holdQuotes(t *testing.T, s *postgres.Store) (release func()) {
	t.Helper()
	ctx := t.Context()
	s.SetLockWait(time.Minute)
	tx, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range postgres.QuoteBatchesInFlight() {
		principal := fmt.Sprintf("quote-holder-%d", i)
		_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, postgres.QuoteLockClass, principal)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.ReadBatch(ctx, quoteReads(testQuote(principal, "tool-a", "0.01", t0), 10))
			assert.NoError(t, err)
		}()
		require.Eventually(t, func() bool { n, _ := s.PendingQuotes(); return n == i+1 }, 5*time.Second, time.Millisecond)
	}
	return func() {
		require.NoError(t, tx.Rollback(ctx))
		wg.Wait()
	}
}

func queuedQuotes(s *postgres.Store) func() int {
	return func() int { _, n := s.PendingQuotes(); return n }
}

// Quotes that go together are counted against their principals' caps as
// if stored one by one, in order: the quote past the cap is refused, and
// the quotes around it, and another principal's, are stored, each with
// the reads of its own principal.
func TestBatchedQuotesCappedAsOneByOne(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	z := observeSizes(s)
	daily := dec("7.50")
	require.NoError(t, s.PutSpendControls(ctx, "hank", toolgatetype.SpendControls{DailyLimitUSD: &daily}))

	ginas := []storage.Quote{
		testQuote("gina", "tool-a", "0.10", t0),
		testQuote("gina", "tool-a", "0.10", t0),
		testQuote("gina", "tool-a", "0.10", t0),
	}
	hanks := testQuote("hank", "tool-a", "0.10", t0)
	reads := []storage.Reads{quoteReads(ginas[0], 2), quoteReads(ginas[1], 2), quoteReads(ginas[2], 2), quoteReads(hanks, 2)}
	results := make([]storage.ReadResult, len(reads))
	errs := make([]error, len(reads))
	calls := make([]func(), len(reads))
	for i := range reads {
		calls[i] = func() { results[i], errs[i] = s.ReadBatch(ctx, reads[i]) }
	}
	retries := s.BatchRetries()
	inOneBatch(t, queuedQuotes(s), holdQuotes(t, s), calls...)

	assert.Contains(t, z.of("quote"), 4, "the four quotes went in one batch")
	assert.Equal(t, retries, s.BatchRetries(), "a refusal is its quote's answer, not the batch's failure")
	assert.NoError(t, errs[0])
	assert.NoError(t, errs[1])
	var refused *storage.OpenQuotesError
	require.ErrorAs(t, errs[2], &refused, "gina's third quote passes her cap of two")
	assert.Equal(t, 2, refused.Max)
	assert.Equal(t, ginas[0].ExpiresAt, refused.FirstExpiry)
	assert.NoError(t, errs[3], "hank's cap is his own")

	for i, q := range []storage.Quote{ginas[0], ginas[1], hanks} {
		got, err := s.GetQuote(ctx, q.ID)
		require.NoError(t, err, "quote %d stored", i)
		assert.Equal(t, storage.QuoteOpen, got.State)
	}
	_, err := s.GetQuote(ctx, ginas[2].ID)
	assert.ErrorIs(t, err, storage.ErrNotFound, "the refused quote stored nothing")

	assert.Nil(t, results[0].SpendControls, "gina has no spend controls")
	require.NotNil(t, results[3].SpendControls, "hank's reads are his own")
	assert.Equal(t, "7.5", results[3].SpendControls.DailyLimitUSD.String())
}

// A quote batch one of whose statements fails (a quote id already taken)
// is sent again quote by quote: only the quote at fault fails.
func TestQuoteBatchFailingWholeIsRetriedQuoteByQuote(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	z := observeSizes(s)

	taken := testQuote("ivan", "tool-a", "0.10", t0)
	require.NoError(t, s.CreateQuote(ctx, taken))
	again := testQuote("ivan", "tool-a", "0.20", t0)
	again.ID = taken.ID
	quotes := []storage.Quote{testQuote("ivan", "tool-a", "0.10", t0), again, testQuote("jude", "tool-a", "0.10", t0)}
	errs := make([]error, len(quotes))
	calls := make([]func(), len(quotes))
	for i := range quotes {
		calls[i] = func() { _, errs[i] = s.ReadBatch(ctx, quoteReads(quotes[i], 0)) }
	}
	retries := s.BatchRetries()
	inOneBatch(t, queuedQuotes(s), holdQuotes(t, s), calls...)

	assert.Contains(t, z.of("quote"), 3)
	assert.Equal(t, retries+1, s.BatchRetries(), "the batch failed as a whole once")
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], storage.ErrAlreadyExists)
	assert.NoError(t, errs[2])
	for _, q := range []storage.Quote{quotes[0], quotes[2]} {
		_, err := s.GetQuote(ctx, q.ID)
		assert.NoError(t, err)
	}
	got, err := s.GetQuote(ctx, taken.ID)
	require.NoError(t, err)
	assert.Equal(t, "0.1", got.TotalUSD.String(), "the first quote under the id is the one kept")
}

// A quote under a key that already holds a call's record, batched with
// others, stores nothing and answers with the record, while the quote
// under a new key beside it, of the same principal, is stored.
func TestBatchedQuoteUnderAKeyWithARecord(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	z := observeSizes(s)
	b := admitOn(t, s, "lena", "k1")
	require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, t0)))

	retry, fresh := testQuote("lena", "tool-a", "0.10", t0), testQuote("lena", "tool-a", "0.10", t0)
	reads := []storage.Reads{quoteReads(retry, 5), quoteReads(fresh, 5)}
	reads[0].Key, reads[1].Key = "k1", "k2"
	results := make([]storage.ReadResult, len(reads))
	errs := make([]error, len(reads))
	calls := make([]func(), len(reads))
	for i := range reads {
		calls[i] = func() { results[i], errs[i] = s.ReadBatch(ctx, reads[i]) }
	}
	inOneBatch(t, queuedQuotes(s), holdQuotes(t, s), calls...)

	assert.Contains(t, z.of("quote"), 2, "the two quotes went in one batch")
	require.NoError(t, errs[0])
	require.NotNil(t, results[0].Prior, "the key's record")
	assert.Equal(t, b.ExecutionID, results[0].Prior.ExecutionID)
	assert.True(t, results[0].Prior.Finished)
	_, err := s.GetQuote(ctx, retry.ID)
	assert.ErrorIs(t, err, storage.ErrNotFound, "no quote is stored for a key that holds a record")

	require.NoError(t, errs[1])
	assert.Nil(t, results[1].Prior, "a new key holds nothing")
	_, err = s.GetQuote(ctx, fresh.ID)
	assert.NoError(t, err, "the new key's quote is stored")
}
