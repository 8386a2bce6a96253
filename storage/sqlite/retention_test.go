package sqlite_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// fileSize is what the store takes on disk: the database file and its
// write-ahead log.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	var total int64
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		total += fi.Size()
	}
	return total
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
	const (
		rounds    = 40
		perRound  = 15
		retention = 10 * time.Minute
	)
	body := `{"output":"` + strings.Repeat("x", 8<<10) + `"}` // the size of a recorded provider answer
	sizes := make([]int64, rounds)
	for r := range rounds {
		now := t0.Add(time.Duration(r) * time.Minute)
		for c := range perRound {
			call(t, s, fmt.Sprint("p", c%4), "tool-a", "0.0011", fmt.Sprint("r", r, "-", c), storage.ExecutionCompleted, body, now)
		}
		res, err := s.Prune(ctx, storage.Prune{
			IdempotencyBefore: now.Add(-retention),
			QuotesBefore:      now.Add(-retention),
			LedgerBefore:      now.Add(-retention),
		})
		require.NoError(t, err)
		// Quotes expire five minutes after they are made, so theirs is the
		// last kind to reach its steady state.
		if r >= rounds/2 {
			assert.Equal(t, storage.PruneResult{Idempotency: perRound, Quotes: perRound, Ledger: perRound}, res, "round %d", r)
		}
		sizes[r] = fileSize(t, s.Path())
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
