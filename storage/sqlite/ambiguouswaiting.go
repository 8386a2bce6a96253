package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// ambiguousWaitingSQL counts the executions waiting for a person and finds
// the oldest of them on executions_ambiguous
// (0014_ambiguous_waiting.sql), which holds only those: the literal
// status is the index's own condition, which is what lets SQLite use it.
const ambiguousWaitingSQL = `SELECT count(*), min(created_at) FROM executions WHERE status = 'ambiguous'`

// AmbiguousWaiting implements storage.AmbiguousCounter with one read on the
// read pool.
func (s *Store) AmbiguousWaiting(ctx context.Context) (int64, time.Time, error) {
	var (
		n      int64
		oldest sql.NullInt64
	)
	if err := translate(s.pool(ctx).queryRow(ambiguousWaitingSQL).Scan(&n, &oldest)); err != nil {
		return 0, time.Time{}, err
	}
	if !oldest.Valid {
		return 0, time.Time{}, nil
	}
	return n, fromNanos(oldest.Int64), nil
}
