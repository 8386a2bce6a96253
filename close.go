package toolgate

import (
	"context"
)

// Close stops the gateway's background work: its delivery of events
// (Config.Events), once the attempts in progress are recorded, or when
// ctx is done, cutting them short. Events not yet delivered stay in the
// store, for this gateway's next run or any other on the store: nothing
// is lost. Call it after the last call has finished and before closing
// the store. Close is safe to call more than once.
func (g *Gateway) Close(ctx context.Context) error {
	if g.events != nil {
		g.events.Close(ctx)
	}
	return context.Cause(ctx)
}
