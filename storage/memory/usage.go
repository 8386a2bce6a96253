package memory

import (
	"context"

	"github.com/toolgate/toolgate/storage"
)

// toolUsage keeps the set of principals rather than a counter alone because
// "unique users" must not count a principal's second call.
type toolUsage struct {
	count int64
	users map[string]struct{}
}

// countUse records one completed execution. The caller holds s.mu.
func (s *Store) countUse(toolID, principal string) {
	u := s.usage[toolID]
	if u == nil {
		u = &toolUsage{users: make(map[string]struct{})}
		s.usage[toolID] = u
	}
	u.count++
	u.users[principal] = struct{}{}
}

// Usage implements storage.Store.
func (s *Store) Usage(ctx context.Context, toolID string) (storage.Usage, error) {
	if err := ctx.Err(); err != nil {
		return storage.Usage{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.usage[toolID]
	if u == nil {
		return storage.Usage{}, nil
	}
	return storage.Usage{Count: u.count, UniqueUsers: int64(len(u.users))}, nil
}

// UsageAll implements storage.Store.
func (s *Store) UsageAll(ctx context.Context) (map[string]storage.Usage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]storage.Usage, len(s.usage))
	for id, u := range s.usage {
		out[id] = storage.Usage{Count: u.count, UniqueUsers: int64(len(u.users))}
	}
	return out, nil
}

// UsageOf implements storage.UsageLister.
func (s *Store) UsageOf(ctx context.Context, toolIDs []string) (map[string]storage.Usage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]storage.Usage, len(toolIDs))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range toolIDs {
		if u := s.usage[id]; u != nil {
			out[id] = storage.Usage{Count: u.count, UniqueUsers: int64(len(u.users))}
		}
	}
	return out, nil
}
