package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

func openInternal(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "toolgate.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func testQuote() storage.Quote {
	at := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	return storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: "tool-a", TotalUSD: decimal.RequireFromString("0.11"),
		CreatedAt: at, ExpiresAt: at.Add(5 * time.Minute), State: storage.QuoteOpen}
}

// insertQuote is the write CreateQuote makes, as a writeOp's fn.
func insertQuote(q storage.Quote) func(tx *writeTx) error {
	return func(tx *writeTx) error {
		_, err := tx.exec(`
			INSERT INTO quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
				price, fee, total, created_at, expires_at, state, used_by_key)
			VALUES (?, ?, ?, '', 1, '', 0, 0, 1100, ?, ?, 'open', '')`,
			idBytes(q.ID), q.Principal, q.ToolID, nanos(q.CreatedAt), nanos(q.ExpiresAt))
		return err
	}
}

func queuedOp(ctx context.Context, fn func(tx *writeTx) error) *writeOp {
	return &writeOp{ctx: ctx, fn: fn, result: make(chan error, 1)}
}

// TestBatchKeepsEachWriteAlone runs one transaction's worth of writes as
// the writer would batch them: each succeeds or fails alone, a write whose
// caller gave up before it started never runs, and one whose caller's
// context ended before its turn is not made.
func TestBatchKeepsEachWriteAlone(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	ctx := t.Context()
	q1, q2, q3, q4 := testQuote(), testQuote(), testQuote(), testQuote()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	ok1 := queuedOp(ctx, insertQuote(q1))
	dup := queuedOp(ctx, insertQuote(q1))
	ok2 := queuedOp(ctx, insertQuote(q2))
	gaveUp := queuedOp(ctx, func(*writeTx) error { t.Error("a write given up before it started ran"); return nil })
	gaveUp.state.Store(opAbandoned)
	late := queuedOp(cancelled, insertQuote(q4))

	// The writer's goroutine is idle, waiting for writes, so the test may
	// use its connection.
	s.w.commit([]*writeOp{ok1, dup, ok2, gaveUp, late})

	assert.NoError(t, <-ok1.result)
	assert.ErrorIs(t, <-dup.result, storage.ErrAlreadyExists)
	assert.NoError(t, <-ok2.result)
	assert.ErrorIs(t, <-late.result, context.Canceled)
	assert.Empty(t, gaveUp.result, "nobody waits for a write given up")
	for _, q := range []storage.Quote{q1, q2} {
		_, err := s.GetQuote(ctx, q.ID)
		assert.NoError(t, err)
	}
	for _, q := range []storage.Quote{q3, q4} {
		_, err := s.GetQuote(ctx, q.ID)
		assert.ErrorIs(t, err, storage.ErrNotFound)
	}
}

// TestBrokenTransactionFailsTheWholeBatch: when the shared transaction
// itself fails (SQLite rolls back the whole of it on a full disk or an I/O
// error; here a write ends it by hand), every write of the batch is told it
// failed, even those that had succeeded, and none of them is kept.
func TestBrokenTransactionFailsTheWholeBatch(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	ctx := t.Context()
	q1, q2 := testQuote(), testQuote()
	before := queuedOp(ctx, insertQuote(q1))
	breaker := queuedOp(ctx, func(tx *writeTx) error { return tx.exec0("ROLLBACK") })
	after := queuedOp(ctx, insertQuote(q2))

	s.w.commit([]*writeOp{before, breaker, after})

	for _, op := range []*writeOp{before, breaker, after} {
		assert.Error(t, <-op.result)
	}
	for _, q := range []storage.Quote{q1, q2} {
		_, err := s.GetQuote(ctx, q.ID)
		assert.ErrorIs(t, err, storage.ErrNotFound)
	}
	// The writer goes on with the next batch.
	require.NoError(t, s.CreateQuote(ctx, q2))
}

// TestWriteGivenUpWhileWaiting: a caller whose context ends while the
// writer is busy gets its context's error, and its write is never made.
func TestWriteGivenUpWhileWaiting(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	ctx := t.Context()
	started, release := make(chan struct{}), make(chan struct{})
	busy := make(chan error, 1)
	go func() {
		busy <- s.write(ctx, func(*writeTx) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started

	q := testQuote()
	waiting, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.CreateQuote(waiting, q) }()
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	close(release)
	require.NoError(t, <-busy)

	_, err := s.GetQuote(ctx, q.ID)
	assert.ErrorIs(t, err, storage.ErrNotFound)
}

// TestWritesAfterCloseFail: a closed store refuses writes with ErrClosed.
func TestWritesAfterCloseFail(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "toolgate.db"), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is harmless")
	assert.ErrorIs(t, s.CreateQuote(t.Context(), testQuote()), ErrClosed)
}
