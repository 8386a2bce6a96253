package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// CreateSession keeps a sign-in session, and forgets some that expired
// before it was created, in one statement. The expired rows another
// sign-in holds are skipped, so that two never wait on each other.
func (s *Store) CreateSession(ctx context.Context, sess storage.Session) error {
	_, err := s.pool.Exec(ctx, s.sql(`
		WITH expired AS (
			DELETE FROM {schema}.approver_sessions WHERE id IN (
				SELECT id FROM {schema}.approver_sessions WHERE expires_at < $4
				ORDER BY expires_at LIMIT 100 FOR UPDATE SKIP LOCKED))
		INSERT INTO {schema}.approver_sessions (id, approver, csrf, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`),
		sess.ID, sess.Approver, sess.CSRF, sess.CreatedAt, sess.ExpiresAt)
	return translate(err)
}

// GetSession reads a live session from the database, never from memory,
// so a sign-out through another instance is seen at once.
func (s *Store) GetSession(ctx context.Context, id string, now time.Time) (storage.Session, error) {
	var out storage.Session
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT id, approver, csrf, created_at, expires_at FROM {schema}.approver_sessions
		WHERE id = $1 AND expires_at > $2`), id, now).
		Scan(&out.ID, &out.Approver, &out.CSRF, &out.CreatedAt, &out.ExpiresAt)
	if err != nil {
		return storage.Session{}, translate(err)
	}
	out.CreatedAt, out.ExpiresAt = utc(out.CreatedAt), utc(out.ExpiresAt)
	return out, nil
}

// DeleteSession signs a session out.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.approver_sessions WHERE id = $1`), id)
	return translate(err)
}

// countEventSQL counts one event under each key of $1 in one upsert: in
// the key's window while it lasts, else in a new one begun now (the SET
// expressions read the row as it was). The keys come sorted, so that two
// events locking the same rows lock them in the same order and never
// deadlock.
const countEventSQL = `
	INSERT INTO {schema}.event_windows AS w (key, count, started_at, ends_at)
	SELECT k, 1, $2, $3 FROM unnest($1::text[]) WITH ORDINALITY AS u(k, n) ORDER BY n
	ON CONFLICT (key) DO UPDATE SET
		count      = CASE WHEN w.ends_at > $2 THEN w.count + 1 ELSE 1 END,
		started_at = CASE WHEN w.ends_at > $2 THEN w.started_at ELSE $2 END,
		ends_at    = CASE WHEN w.ends_at > $2 THEN w.ends_at ELSE $3 END
	RETURNING key, count, started_at, ends_at`

// forgetWindowsSQL deletes some windows that have ended, skipping rows
// another instance holds, so that two cleanups never wait on each other.
const forgetWindowsSQL = `
	DELETE FROM {schema}.event_windows WHERE key IN (
		SELECT key FROM {schema}.event_windows WHERE ends_at <= $1
		ORDER BY ends_at LIMIT 100 FOR UPDATE SKIP LOCKED)`

// CountEvent counts one event under each key. Concurrent upserts of one
// key wait for each other's row lock, so none is lost. A window begun
// anew also forgets some windows that have ended.
func (s *Store) CountEvent(ctx context.Context, e storage.WindowEvent) ([]storage.Window, error) {
	keys := slices.Clone(e.Keys)
	slices.Sort(keys)
	keys = slices.Compact(keys) // a row may be upserted once per statement
	rows, err := s.pool.Query(ctx, s.sql(countEventSQL), keys, e.Now, e.Now.Add(e.Window))
	if err != nil {
		return nil, translate(err)
	}
	byKey, begun, err := scanWindows(rows)
	if err != nil {
		return nil, err
	}
	if begun {
		if _, err := s.pool.Exec(ctx, s.sql(forgetWindowsSQL), e.Now); err != nil {
			return nil, translate(err)
		}
	}
	return inOrder(e.Keys, byKey), nil
}

// Windows reads the live windows of keys.
func (s *Store) Windows(ctx context.Context, keys []string, now time.Time) ([]storage.Window, error) {
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT key, count, started_at, ends_at FROM {schema}.event_windows
		WHERE key = ANY($1::text[]) AND ends_at > $2`), keys, now)
	if err != nil {
		return nil, translate(err)
	}
	byKey, _, err := scanWindows(rows)
	if err != nil {
		return nil, err
	}
	return inOrder(keys, byKey), nil
}

// scanWindows reads (key, count, started_at, ends_at) rows by key, and
// whether any is a window just begun.
func scanWindows(rows pgx.Rows) (map[string]storage.Window, bool, error) {
	defer rows.Close()
	out := map[string]storage.Window{}
	begun := false
	for rows.Next() {
		var (
			key string
			w   storage.Window
		)
		if err := rows.Scan(&key, &w.Count, &w.Start, &w.End); err != nil {
			return nil, false, translate(err)
		}
		w.Start, w.End = utc(w.Start), utc(w.End)
		out[key] = w
		begun = begun || w.Count == 1
	}
	if err := rows.Err(); err != nil {
		return nil, false, translate(err)
	}
	return out, begun, nil
}

// inOrder lists the windows of keys in their order, the zero Window for
// a key with none.
func inOrder(keys []string, byKey map[string]storage.Window) []storage.Window {
	out := make([]storage.Window, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}

// Secret returns the secret under name, keeping candidate first when there
// is none. The insert of a second instance waits for the first's to
// commit and then does nothing; the read that follows, a statement of its
// own, sees the row the first kept.
func (s *Store) Secret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if _, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`),
		name, candidate); err != nil {
		return nil, translate(err)
	}
	var kept []byte
	if err := s.pool.QueryRow(ctx, s.sql(`SELECT value FROM {schema}.secrets WHERE name = $1`), name).Scan(&kept); err != nil {
		return nil, translate(err)
	}
	return kept, nil
}
