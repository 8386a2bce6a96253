package sqlite

import (
	"context"
	"strings"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/internal/sqlstore"
)

// countUse counts one completed execution of toolID by principal, inside
// FinishExecution's write. The principal is a new user exactly when its
// tool_users row is inserted now.
//
// A tool_users row is never deleted, so once the insert has found one
// already there, the writer remembers it, from the commit on, and later
// finishes skip the insert: most finishes are by a principal that has used
// the tool before. Not before the commit: the row found may be one an
// earlier write of the same transaction inserted, gone if it fails.
func countUse(tx *writeTx, toolID, principal string) error {
	user := toolUser{toolID, principal}
	var newUser int64
	if _, known := tx.w.users[user]; !known {
		n, err := tx.exec(`INSERT INTO tool_users (tool_id, principal) VALUES (?, ?) ON CONFLICT DO NOTHING`,
			toolID, principal)
		if err != nil {
			return err
		}
		if newUser = n; n == 0 {
			tx.w.foundUsers = append(tx.w.foundUsers, user)
		}
	}
	_, err := tx.exec(`
		INSERT INTO tool_usage (tool_id, count, unique_users) VALUES (?1, 1, ?2)
		ON CONFLICT (tool_id) DO UPDATE SET count = count + 1, unique_users = unique_users + ?2`,
		toolID, newUser)
	return err
}

// toolUser is a tool_users row: a tool, and a principal that has used it.
type toolUser struct{ toolID, principal string }

// maxKnownUsers is how many tool_users rows the writer remembers at most.
const maxKnownUsers = 1 << 14

// Usage returns one tool's usage counters, zero when it has none.
func (s *Store) Usage(ctx context.Context, toolID string) (storage.Usage, error) {
	var u storage.Usage
	err := translate(s.pool(ctx).queryRow(`SELECT count, unique_users FROM tool_usage WHERE tool_id = ?`, toolID).
		Scan(&u.Count, &u.UniqueUsers))
	if isNotFound(err) {
		return storage.Usage{}, nil
	}
	return u, err
}

// UsageAll returns the usage counters of every tool that has any.
func (s *Store) UsageAll(ctx context.Context) (map[string]storage.Usage, error) {
	rows, err := s.pool(ctx).query(`SELECT tool_id, count, unique_users FROM tool_usage`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]storage.Usage)
	if err := sqlstore.CollectUsage(rows, out, false); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// UsageOf implements storage.UsageLister: the counters of one page of a
// registry listing, in one query.
func (s *Store) UsageOf(ctx context.Context, toolIDs []string) (map[string]storage.Usage, error) {
	out := make(map[string]storage.Usage, len(toolIDs))
	if len(toolIDs) == 0 {
		return out, nil
	}
	args := make([]any, len(toolIDs))
	for i, id := range toolIDs {
		args[i] = id
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(toolIDs)), ",")
	rows, err := s.pool(ctx).query(`SELECT tool_id, count, unique_users FROM tool_usage WHERE tool_id IN (`+marks+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if err := sqlstore.CollectUsage(rows, out, true); err != nil {
		return nil, translate(err)
	}
	return out, nil
}
