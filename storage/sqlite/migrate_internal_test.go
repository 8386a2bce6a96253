package sqlite

import (
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage/internal/sqlstore"
)

// rawDB opens the file at path with no store around it, as an operator's
// sqlite3 shell would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, "busy_timeout(5000)"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// migratedBefore opens a new file at path holding the schema as it was
// before migration version: every earlier migration applied, none later,
// as a store of that time left it.
func migratedBefore(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	all, err := migrations()
	require.NoError(t, err)
	var before []sqlstore.Migration
	for _, m := range all {
		if m.Version < version {
			before = append(before, m)
		}
	}
	require.Len(t, before, version-1)
	db := rawDB(t, path)
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	require.NoError(t, applyMigrations(t.Context(), conn, before))
	require.NoError(t, conn.Close())
	return db
}

func appliedVersions(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query(`SELECT version FROM schema_migrations ORDER BY version`)
	require.NoError(t, err)
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		require.NoError(t, rows.Scan(&v))
		out = append(out, v)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestOpenAtOnceMigratesOnce: processes that open a new file at the same
// moment all start, and the migrations are applied once.
func TestOpenAtOnceMigratesOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	all, err := migrations()
	require.NoError(t, err)
	const n = 4
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = Open(t.Context(), path, nil)
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.NoError(t, stores[i].Close())
	}
	// And opening again applies nothing new.
	s, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	want := make([]int, len(all))
	for i, m := range all {
		want[i] = m.Version
	}
	assert.Equal(t, want, appliedVersions(t, rawDB(t, path)))
}

// TestNewerFileIsRefused: a file that a newer toolgate has migrated further
// is not opened, with a message that says what to do, rather than run by
// code that would not keep its newer tables right.
func TestNewerFileIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	s, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = rawDB(t, path).Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 0)`)
	require.NoError(t, err)

	_, err = Open(t.Context(), path, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "schema version 9999, newer than this toolgate's")
}

// TestFailedMigrationLeavesNothing: a migration that fails undoes the whole
// run, the migrations before it in the same run included, so the next
// start tries again from where the file was.
func TestFailedMigrationLeavesNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	fsys := fstest.MapFS{
		"m/0001_first.sql":  {Data: []byte(`CREATE TABLE first (id INTEGER PRIMARY KEY) STRICT;`)},
		"m/0002_broken.sql": {Data: []byte(`CREATE TABLE second (id INTEGER PRIMARY KEY) STRICT; CREATE TABLE oops (;`)},
	}
	all, err := sqlstore.ReadMigrations(fsys, "m")
	require.NoError(t, err)
	db := rawDB(t, path)
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()

	err = applyMigrations(t.Context(), conn, all)
	require.ErrorContains(t, err, "apply 0002_broken.sql")

	var tables []string
	rows, err := conn.QueryContext(t.Context(), `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	assert.Empty(t, tables, "neither migration's tables, nor the version table, are left")

	// Fixed, the same file migrates.
	fsys["m/0002_broken.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE second (id INTEGER PRIMARY KEY) STRICT;`)}
	all, err = sqlstore.ReadMigrations(fsys, "m")
	require.NoError(t, err)
	require.NoError(t, applyMigrations(t.Context(), conn, all))
	assert.Equal(t, []int{1, 2}, appliedVersions(t, db))
}

// TestEmbeddedMigrationNames: the embedded migrations are well named.
func TestEmbeddedMigrationNames(t *testing.T) {
	t.Parallel()
	all, err := migrations()
	require.NoError(t, err)
	assert.NotEmpty(t, all)
}
