package postgres

import (
	"context"
	"time"
)

// AmbiguousWaiting implements storage.AmbiguousCounter. It reads
// ambiguous_waiting, which triggers on executions keep
// (0019_ambiguous_waiting.sql) and which holds only the executions that
// wait, so the read costs what waits whatever the history kept, and
// leaves the finish's heap-only update as it was.
func (s *Store) AmbiguousWaiting(ctx context.Context) (int64, time.Time, error) {
	var (
		n      int64
		oldest *time.Time
	)
	if err := s.pool.QueryRow(ctx, s.sql(`
		SELECT count(*), min(created_at) FROM {schema}.ambiguous_waiting`)).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, translate(err)
	}
	return n, nullTime(oldest), nil
}
