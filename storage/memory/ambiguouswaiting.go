package memory

import (
	"context"
	"time"
)

// AmbiguousWaiting implements storage.AmbiguousCounter from the waiting
// set FinishExecution and ResolveExecution keep, so it walks the
// executions that wait and no other.
func (s *Store) AmbiguousWaiting(ctx context.Context) (int64, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return 0, time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var oldest time.Time
	for _, created := range s.waiting {
		if oldest.IsZero() || created.Before(oldest) {
			oldest = created
		}
	}
	return int64(len(s.waiting)), oldest, nil
}
