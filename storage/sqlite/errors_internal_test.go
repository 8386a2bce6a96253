package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// TestTranslate feeds translate the driver's real errors.
func TestTranslate(t *testing.T) {
	t.Parallel()
	db := rawDB(t, filepath.Join(t.TempDir(), "errors.db"))
	_, err := db.Exec(`
		CREATE TABLE parent (id INTEGER PRIMARY KEY) STRICT;
		CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent (id), name TEXT UNIQUE) STRICT;
		INSERT INTO parent (id) VALUES (1);
		INSERT INTO child (id, parent, name) VALUES (1, 1, 'a');`)
	require.NoError(t, err)
	conn, err := db.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(t.Context(), `PRAGMA foreign_keys = ON`)
	require.NoError(t, err)
	driverErr := func(query string) error {
		_, err := conn.ExecContext(t.Context(), query)
		require.Error(t, err, query)
		return err
	}

	cases := []struct {
		name string
		err  error
		is   error
		not  error
	}{
		{"no rows", conn.QueryRowContext(t.Context(), `SELECT id FROM parent WHERE id = 2`).Scan(new(int)), storage.ErrNotFound, nil},
		{"primary key", driverErr(`INSERT INTO parent (id) VALUES (1)`), storage.ErrAlreadyExists, nil},
		{"unique", driverErr(`INSERT INTO child (id, parent, name) VALUES (2, 1, 'a')`), storage.ErrAlreadyExists, nil},
		{"foreign key", driverErr(`INSERT INTO child (id, parent, name) VALUES (3, 9, 'c')`), storage.ErrNotFound, nil},
		{"syntax", driverErr(`SELEKT 1`), nil, storage.ErrNotFound},
		{"context", context.Canceled, context.Canceled, storage.ErrNotFound},
	}
	for _, tc := range cases {
		got := translate(tc.err)
		require.Error(t, got, tc.name)
		if tc.is != nil {
			assert.ErrorIs(t, got, tc.is, tc.name)
		}
		if tc.not != nil {
			assert.False(t, errors.Is(got, tc.not), tc.name)
		}
		if tc.is == nil || tc.is == context.Canceled {
			assert.Contains(t, got.Error(), "sqlite:", "%s: an error with no sentinel says where it comes from", tc.name)
		}
	}
	assert.NoError(t, translate(nil))
	assert.False(t, errors.Is(translate(sql.ErrConnDone), storage.ErrNotFound))
}
