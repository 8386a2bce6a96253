package storage

import "context"

// UsageLister is an optional Store method that reads the usage counters of
// the given tools only, leaving out those never used. A registry listing
// shows at most one page of tools, and UsageAll copies the counters of every
// tool ever used, which grows with the registry. Its answers must be exactly
// what Usage gives for each tool; storagetest.Run checks that when a Store
// implements it.
type UsageLister interface {
	UsageOf(ctx context.Context, toolIDs []string) (map[string]Usage, error)
}

// UsageOf returns the usage of toolIDs from s: through UsageLister when s
// has it, otherwise picked out of UsageAll. Tools never used are left out.
func UsageOf(ctx context.Context, s Store, toolIDs []string) (map[string]Usage, error) {
	if l, ok := s.(UsageLister); ok {
		return l.UsageOf(ctx, toolIDs)
	}
	all, err := s.UsageAll(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Usage, len(toolIDs))
	for _, id := range toolIDs {
		if u, ok := all[id]; ok {
			out[id] = u
		}
	}
	return out, nil
}
