package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/storage/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations returns the embedded migrations in version order.
func migrations() ([]sqlstore.Migration, error) {
	return sqlstore.ReadMigrations(migrationFiles, "migrations")
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
func applyMigrations(ctx context.Context, conn *sql.Conn, all []sqlstore.Migration) (err error) {
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
	if len(all) > 0 && newest > all[len(all)-1].Version {
		return fmt.Errorf("the file is at schema version %d, newer than this toolgate's %d: run a toolgate at least as new as the one that wrote it",
			newest, all[len(all)-1].Version)
	}
	for _, m := range all {
		if done[m.Version] {
			continue
		}
		// No arguments: the driver runs every statement of the file.
		if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("apply %s: %w", m.Name, translate(err))
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UnixNano()); err != nil {
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
