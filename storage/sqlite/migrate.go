package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded SQL file, named NNNN_description.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order.
func migrations() ([]migration, error) {
	return readMigrations(migrationFiles, "migrations")
}

// readMigrations reads the migrations in dir of fsys, in version order.
func readMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %q is not named NNNN_description.sql", e.Name())
		}
		v, err := strconv.Atoi(prefix)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %q has no positive version", e.Name())
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", e.Name(), err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %q and %q share a version", out[i-1].name, out[i].name)
		}
	}
	return out, nil
}

// migrate brings the file up to the newest embedded migration.
func migrate(ctx context.Context, conn *sql.Conn) error {
	all, err := migrations()
	if err != nil {
		return err
	}
	return applyMigrations(ctx, conn, all)
}

// applyMigrations applies those of all that the file lacks, in one
// transaction that takes the write lock first: when several processes open
// a new file at once, one migrates and the others then find the work done,
// and a failed migration leaves nothing behind. A file that a newer
// version of this store has migrated further is refused, since this
// version would not keep the newer tables right.
func applyMigrations(ctx context.Context, conn *sql.Conn, all []migration) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return translate(err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return translate(err)
	}
	done, newest, err := appliedMigrations(ctx, conn)
	if err != nil {
		return err
	}
	if len(all) > 0 && newest > all[len(all)-1].version {
		return fmt.Errorf("the file is at schema version %d, newer than this toolgate's %d: run a toolgate at least as new as the one that wrote it",
			newest, all[len(all)-1].version)
	}
	for _, m := range all {
		if done[m.version] {
			continue
		}
		// No arguments: the driver runs every statement of the file.
		if _, err := conn.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("apply %s: %w", m.name, translate(err))
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, time.Now().UnixNano()); err != nil {
			return translate(err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return translate(err)
	}
	return nil
}

// appliedMigrations reads which versions the file has, and the newest.
func appliedMigrations(ctx context.Context, conn *sql.Conn) (map[int]bool, int, error) {
	rows, err := conn.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, 0, translate(err)
	}
	defer rows.Close()
	done := make(map[int]bool)
	newest := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, 0, translate(err)
		}
		done[v] = true
		newest = max(newest, v)
	}
	return done, newest, translate(rows.Err())
}
