package toolgate

import (
	"context"
	"fmt"
)

// Close stops the gateway's background work and waits for it, until ctx
// is done: it stops starting budget alert checks and waits for those
// running, so that every alert they claim reaches the ApprovalNotifier.
// Call it after the last call has finished and before closing the
// notifier and the store, which the checks use. A call made after Close
// is still served, but its charge starts no alert check.
//
// When ctx is done first, the checks still running are cancelled and
// Close returns ctx's error: an alert they had claimed but not yet given
// to the notifier is then lost (see budgetalerts.go). Close is safe to
// call more than once.
func (g *Gateway) Close(ctx context.Context) error {
	a := g.alerts
	if a == nil {
		return nil
	}
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	done := make(chan struct{})
	go func() {
		a.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		a.cancelBase()
		return nil
	case <-ctx.Done():
		a.cancelBase()
		return fmt.Errorf("toolgate: budget alert checks still running: %w", context.Cause(ctx))
	}
}
