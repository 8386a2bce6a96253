package sqlstore_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage/internal/sqlstore"
)

// TestReadMigrations: the migrations come in version order, whatever order the
// directory lists them in.
func TestReadMigrations(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"m/0010_later.sql":  {Data: []byte("SELECT 10;")},
		"m/0002_second.sql": {Data: []byte("SELECT 2;")},
		"m/0001_first.sql":  {Data: []byte("SELECT 1;")},
	}
	got, err := sqlstore.ReadMigrations(fsys, "m")
	require.NoError(t, err)
	assert.Equal(t, []sqlstore.Migration{
		{Version: 1, Name: "0001_first.sql", SQL: "SELECT 1;"},
		{Version: 2, Name: "0002_second.sql", SQL: "SELECT 2;"},
		{Version: 10, Name: "0010_later.sql", SQL: "SELECT 10;"},
	}, got)
}

// TestMigrationNames: a file not named NNNN_description.sql, or two with one
// version, is a mistake caught before anything is applied.
func TestMigrationNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		files fstest.MapFS
		want  string
	}{
		{"no version", fstest.MapFS{"m/init.sql": {}}, "is not named NNNN_description.sql"},
		{"not sql", fstest.MapFS{"m/0001_init.txt": {}}, "is not named NNNN_description.sql"},
		{"version zero", fstest.MapFS{"m/0000_init.sql": {}}, "has no positive version"},
		{"same version", fstest.MapFS{"m/0001_a.sql": {}, "m/0001_b.sql": {}}, "share a version"},
		{"no directory", fstest.MapFS{}, "read migrations"},
	}
	for _, tc := range cases {
		_, err := sqlstore.ReadMigrations(tc.files, "m")
		assert.ErrorContains(t, err, tc.want, tc.name)
	}
}
