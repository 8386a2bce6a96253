package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage/sqlite"
)

// newStore opens a Store on a new file in the test's temporary directory,
// closed when the test ends.
func newStore(t testing.TB) *sqlite.Store {
	t.Helper()
	return openStore(t, filepath.Join(t.TempDir(), "toolgate.db"))
}

// openStore opens a Store on the file at path, closed when the test ends.
func openStore(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// pruneAll is the most rows of each kind one Prune of these tests deletes:
// the gateway's batch, more than any test stores. A store is handed
// complete parameters, so a test says how many too.
const pruneAll = 1000
