package sqlite

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// CreateSession keeps a sign-in session, and forgets those that expired
// before it was created, in one write.
func (s *Store) CreateSession(ctx context.Context, sess storage.Session) error {
	return s.write(ctx, func(tx *writeTx) error {
		if _, err := tx.exec(`DELETE FROM approver_sessions WHERE expires_at < ?`, nanos(sess.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.exec(`INSERT INTO approver_sessions (id, approver, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
			sess.ID, sess.Approver, sess.CSRF, nanos(sess.CreatedAt), nanos(sess.ExpiresAt))
		return err
	})
}

// GetSession reads a live session from the file, never from memory, so a
// sign-out by another process is seen at once.
func (s *Store) GetSession(ctx context.Context, id string, now time.Time) (storage.Session, error) {
	var (
		out              storage.Session
		created, expires int64
	)
	err := translate(s.pool(ctx).queryRow(`
		SELECT id, approver, csrf, created_at, expires_at FROM approver_sessions WHERE id = ? AND expires_at > ?`,
		id, nanos(now)).Scan(&out.ID, &out.Approver, &out.CSRF, &created, &expires))
	if err != nil {
		return storage.Session{}, err
	}
	out.CreatedAt, out.ExpiresAt = fromNanos(created), fromNanos(expires)
	return out, nil
}

// DeleteSession signs a session out.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *writeTx) error {
		_, err := tx.exec(`DELETE FROM approver_sessions WHERE id = ?`, id)
		return err
	})
}

// countEventSQL counts one event under a key: in its window while the
// window lasts, else in a new one begun now. The SET expressions all read
// the row as it was.
const countEventSQL = `
	INSERT INTO event_windows (key, count, started_at, ends_at) VALUES (?1, 1, ?2, ?3)
	ON CONFLICT (key) DO UPDATE SET
		count      = CASE WHEN ends_at > ?2 THEN count + 1 ELSE 1 END,
		started_at = CASE WHEN ends_at > ?2 THEN started_at ELSE ?2 END,
		ends_at    = CASE WHEN ends_at > ?2 THEN ends_at ELSE ?3 END
	RETURNING count, started_at, ends_at`

// CountEvent counts one event under each key in one write; the writes of
// every process on the file take turns, so none is lost. A window begun
// anew also forgets the windows that have ended.
func (s *Store) CountEvent(ctx context.Context, e storage.WindowEvent) ([]storage.Window, error) {
	out := make([]storage.Window, len(e.Keys))
	now, end := nanos(e.Now), nanos(e.Now.Add(e.Window))
	err := s.write(ctx, func(tx *writeTx) error {
		begun := false
		for i, k := range e.Keys {
			var start, ends int64
			if err := translate(tx.queryRow(countEventSQL, k, now, end).Scan(&out[i].Count, &start, &ends)); err != nil {
				return err
			}
			out[i].Start, out[i].End = fromNanos(start), fromNanos(ends)
			begun = begun || out[i].Count == 1
		}
		if begun {
			_, err := tx.exec(`DELETE FROM event_windows WHERE ends_at <= ?`, now)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Windows reads the live windows of keys.
func (s *Store) Windows(ctx context.Context, keys []string, now time.Time) ([]storage.Window, error) {
	out := make([]storage.Window, len(keys))
	rows, err := s.pool(ctx).query(`
		SELECT key, count, started_at, ends_at FROM event_windows
		WHERE key IN (SELECT value FROM json_each(?1)) AND ends_at > ?2`, jsonStrings(keys), nanos(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			key         string
			w           storage.Window
			start, ends int64
		)
		if err := rows.Scan(&key, &w.Count, &start, &ends); err != nil {
			return nil, translate(err)
		}
		w.Start, w.End = fromNanos(start), fromNanos(ends)
		for i, k := range keys {
			if k == key {
				out[i] = w
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// Secret returns the secret under name, keeping candidate first when there
// is none; the check and the insert are one write.
func (s *Store) Secret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	var kept []byte
	err := s.write(ctx, func(tx *writeTx) error {
		if _, err := tx.exec(`INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			name, candidate, time.Now().UnixNano()); err != nil {
			return err
		}
		return translate(tx.queryRow(`SELECT value FROM secrets WHERE name = ?`, name).Scan(&kept))
	})
	if err != nil {
		return nil, err
	}
	return kept, nil
}
