package storage

import (
	"context"
	"time"
)

// AmbiguousCounter is the part of Store that says how many ambiguous
// executions wait for a person to resolve them, across every principal,
// for the gateway's metrics.
type AmbiguousCounter interface {
	// AmbiguousWaiting returns the number of executions whose status is
	// ExecutionAmbiguous, so not yet resolved, and the CreatedAt of the
	// oldest of them, zero when there are none. Prune keeps unresolved
	// executions, so the count is complete however old they are. It is
	// read at every metrics scrape: its cost must grow with the executions
	// waiting, not with the history kept.
	AmbiguousWaiting(ctx context.Context) (n int64, oldest time.Time, err error)
}
