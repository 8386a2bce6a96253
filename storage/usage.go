package storage

import "context"

// UsageLister is the part of Store that reads the usage counters of the
// given tools only. A registry listing shows at most one page of tools,
// and UsageAll copies the counters of every tool ever used, which grows
// with the registry.
type UsageLister interface {
	// UsageOf returns the usage counters of toolIDs, leaving out those
	// never used: for each tool, exactly what Usage gives.
	UsageOf(ctx context.Context, toolIDs []string) (map[string]Usage, error)
}
