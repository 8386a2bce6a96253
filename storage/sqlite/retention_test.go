package sqlite_test

import (
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// fileSize is the size of the database file once everything written so far
// is in it: the write-ahead log is checkpointed into the file first (and
// emptied), through a connection of the test's own, so the size counts
// pages in use or free, not log frames.
func fileSize(t *testing.T, db *sql.DB, path string) int64 {
	t.Helper()
	_, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

// TestFileStaysBoundedUnderRetention runs sustained traffic on a clock that
// moves a minute per round, with results of a realistic size, pruning as
// the gateway's retention does (with windows of minutes rather than a day
// and a month, so that the test reaches its steady state quickly). Once
// retention deletes as much per round as the traffic adds, pages freed by
// the deletions are reused and the file stops growing.
func TestFileStaysBoundedUnderRetention(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	db, err := sql.Open("sqlite", s.Path())
	require.NoError(t, err)
	defer db.Close()
	const (
		rounds    = 24
		perRound  = 10
		retention = 5 * time.Minute
	)
	body := `{"output":"` + strings.Repeat("x", 8<<10) + `"}` // the size of a recorded provider answer
	sizes := make([]int64, rounds)
	for r := range rounds {
		now := t0.Add(time.Duration(r) * time.Minute)
		// The round's callers call at once, as a gateway's would.
		var wg sync.WaitGroup
		for c := range perRound {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := quoteFor(fmt.Sprint("p", c%4), "tool-a", "0.0011", now)
				b := beginFor(q, fmt.Sprint("r", r, "-", c), now)
				assert.NoError(t, s.CreateQuote(ctx, q))
				_, err := s.BeginExecution(ctx, b)
				assert.NoError(t, err)
				assert.NoError(t, s.FinishExecution(ctx, finishFor(b, storage.ExecutionCompleted, body, now)))
			}()
		}
		wg.Wait()
		require.False(t, t.Failed())
		res, err := s.Prune(ctx, storage.Prune{
			IdempotencyBefore: now.Add(-retention),
			QuotesBefore:      now.Add(-retention),
			LedgerBefore:      now.Add(-retention),
			Limit:             pruneAll,
		})
		require.NoError(t, err)
		// Quotes expire five minutes after they are made, so theirs is the
		// last kind to reach its steady state.
		if r >= rounds/2 {
			assert.Equal(t, storage.PruneResult{Idempotency: perRound, Quotes: perRound, Ledger: perRound}, res, "round %d", r)
		}
		sizes[r] = fileSize(t, db, s.Path())
	}
	steady, last := sizes[rounds/2], sizes[rounds-1]
	t.Logf("size after round 1: %d KiB, round %d: %d KiB, round %d: %d KiB", sizes[0]>>10, rounds/2, steady>>10, rounds, last>>10)
	assert.LessOrEqual(t, last, steady+steady/10,
		"the file keeps growing under retention: %d bytes at round %d, %d at round %d", steady, rounds/2, last, rounds)

	// Everything still inside the window is there, and replays.
	for c := range perRound {
		rec, err := s.GetIdempotency(ctx, fmt.Sprint("p", c%4), fmt.Sprint("r", rounds-1, "-", c))
		require.NoError(t, err)
		assert.Equal(t, body, string(rec.Response))
	}
}
