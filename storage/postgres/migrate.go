package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockClass is the first key of the two-key advisory lock that
// serializes migrations; the second is a hash of the schema name, so
// gateways in different schemas of one database do not wait for each other.
// The two-key space does not overlap the one-key space other applications
// most often use.
const migrationLockClass = 0x746f6f6c // "tool"

// migrations returns the embedded migrations in version order.
func migrations() ([]sqlstore.Migration, error) {
	all, err := sqlstore.ReadMigrations(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return all, nil
}

// migrate brings the schema up to the newest embedded migration. Everything
// happens in one transaction that first takes an advisory lock, so when
// several processes start at once one migrates and the others then find
// the work done; a failed migration leaves nothing behind.
func (s *Store) migrate(ctx context.Context, schema string) error {
	all, err := migrations()
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, migrationLockClass, schema); err != nil {
			return err
		}
		// DDL runs only when something is missing: CREATE ... IF NOT EXISTS
		// checks the CREATE privilege before it looks, and a gateway's role
		// that may only use an existing schema must still be able to start.
		// The checks come after the lock, so a concurrent starter's DDL is
		// either committed and seen, or not begun.
		var haveSchema, haveTable bool
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), to_regclass($2) IS NOT NULL`,
			schema, s.schema+".schema_migrations").Scan(&haveSchema, &haveTable); err != nil {
			return err
		}
		if !haveSchema {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+s.schema); err != nil {
				return err
			}
		}
		if !haveTable {
			if _, err := tx.Exec(ctx, s.sql(`CREATE TABLE {schema}.schema_migrations (
				version    integer     PRIMARY KEY,
				name       text        NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`)); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, s.sql(`SELECT version FROM {schema}.schema_migrations`))
		if err != nil {
			return err
		}
		applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		done := make(map[int]bool, len(applied))
		for _, v := range applied {
			done[v] = true
		}
		pathSet := false
		for _, m := range all {
			if done[m.Version] {
				continue
			}
			if !pathSet {
				// Unqualified names in the migration files land in the
				// schema. Other statements here qualify names anyway:
				// pgx caches prepared statements per connection by their
				// text, whatever the search_path.
				if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+s.schema); err != nil {
					return err
				}
				pathSet = true
			}
			// No arguments: pgx sends the file with the simple protocol,
			// which accepts several statements in one string.
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("apply %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.schema_migrations (version, name) VALUES ($1, $2)`), m.Version, m.Name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate schema %s: %w", s.schema, err)
	}
	return nil
}
