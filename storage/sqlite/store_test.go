package sqlite_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/sqlite"
)

// TestOpenRefusesWhatIsNotADatabaseFile: each mistake is a clear error
// before anything is created.
func TestOpenRefusesWhatIsNotADatabaseFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name string
		path string
		cfg  *sqlite.Config
		want string
	}{
		{"empty path", "", nil, "the database path is empty"},
		{"in memory", ":memory:", nil, "use storage/memory"},
		{"a URI", "file:toolgate.db?mode=memory", nil, "is not a file path"},
		{"no such directory", filepath.Join(dir, "missing", "toolgate.db"), nil, "does not exist"},
		{"a directory", dir, nil, "is a directory"},
		{"negative busy timeout", filepath.Join(dir, "a.db"), &sqlite.Config{BusyTimeout: -time.Second}, "BusyTimeout"},
		{"too many readers", filepath.Join(dir, "b.db"), &sqlite.Config{ReadConnections: 1000}, "ReadConnections"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sqlite.Open(t.Context(), tc.path, tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := os.Stat(filepath.Join(dir, "a.db"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a refused config creates no file")

	// A file that is not a SQLite database is refused, and left as it was.
	notes := filepath.Join(dir, "notes.txt")
	text := []byte("not a database, but someone's notes, long enough to fill SQLite's header of a hundred bytes...........\n")
	require.NoError(t, os.WriteFile(notes, text, 0o600))
	_, err = sqlite.Open(t.Context(), notes, nil)
	require.ErrorContains(t, err, "not a database")
	got, err := os.ReadFile(notes)
	require.NoError(t, err)
	assert.Equal(t, text, got)
}

// TestNewFileIsTheOwners: the file holds every caller's results, so a new
// one is readable by its owner only.
func TestNewFileIsTheOwners(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	fi, err := os.Stat(s.Path())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.True(t, filepath.IsAbs(s.Path()))
}

// TestRelativePathIsMadeAbsolute: a relative path names the file from the
// working directory at Open, and Path says which file that was.
func TestRelativePathIsMadeAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s := openStore(t, "toolgate.db")
	want, err := filepath.EvalSymlinks(filepath.Join(dir, "toolgate.db"))
	require.NoError(t, err)
	got, err := filepath.EvalSymlinks(s.Path())
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// TestAmountsAreExact: amounts are kept in ten-thousandths of a dollar, the
// four decimals every amount has; one with more is refused, never rounded, and
// nothing is stored.
func TestAmountsAreExact(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()

	q := quoteFor("alice", "tool-a", "0.00005", t0)
	require.ErrorContains(t, s.CreateQuote(ctx, q), "more than 4 decimals")
	_, err := s.GetQuote(ctx, q.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)

	big := quoteFor("alice", "tool-a", "922337203685477.5807", t0) // the largest int64 of ten-thousandths
	require.NoError(t, s.CreateQuote(ctx, big))
	got, err := s.GetQuote(ctx, big.ID)
	require.NoError(t, err)
	assert.Equal(t, "922337203685477.5807", got.TotalUSD.String())
	over := quoteFor("alice", "tool-a", "922337203685477.5808", t0)
	require.ErrorContains(t, s.CreateQuote(ctx, over), "out of range")

	// Sums of many small amounts stay exact: ten thousand calls of 0.0001
	// would drift in floating point.
	for i := range 30 {
		call(t, s, "bob", "tool-a", "0.0001", string(rune('a'+i)), storage.ExecutionCompleted, `{}`, t0)
	}
	used, err := s.MeasureLimits(ctx, "bob", []storage.Limit{{Measure: storage.MeasureSpend}})
	require.NoError(t, err)
	assert.Equal(t, "0.0030", used[0].StringFixed(4))
	assert.True(t, dec("0.003").Equal(used[0]))
}

// TestLockedFileIsAClearError: while another process holds the file's write
// lock for longer than the busy timeout, a write fails with an error that
// says so, stores nothing, and works once the lock is released.
func TestLockedFileIsAClearError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s, err := sqlite.Open(t.Context(), path, &sqlite.Config{BusyTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })

	other, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	lock, err := other.Conn(t.Context())
	require.NoError(t, err)
	_, err = lock.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.NoError(t, err)

	q := quoteFor("alice", "tool-a", "0.11", t0)
	err = s.CreateQuote(t.Context(), q)
	require.ErrorContains(t, err, "locked by another connection for longer than the busy timeout")
	assert.NotErrorIs(t, err, storage.ErrAlreadyExists)

	_, err = lock.ExecContext(t.Context(), "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, lock.Close())
	_, err = s.GetQuote(t.Context(), q.ID)
	require.ErrorIs(t, err, storage.ErrNotFound, "the failed write stored nothing")
	require.NoError(t, s.CreateQuote(t.Context(), q))
}
