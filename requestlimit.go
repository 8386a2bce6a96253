package toolgate

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// limitWithDefaults fills the zero fields of l with max and window.
func limitWithDefaults(l toolgatetype.RequestLimit, max int, window time.Duration) toolgatetype.RequestLimit {
	if l.Max == 0 {
		l.Max = max
	}
	if l.Window == 0 {
		l.Window = window
	}
	return l
}

// countApprovalRequest counts one approval request of principal, asked at
// now, and refuses it (rate_limited) when the principal's window already
// holds the most it may. Every request asked counts, the refused ones
// too, so that asking faster never gets more through.
func (g *Gateway) countApprovalRequest(ctx context.Context, principal string, now time.Time) error {
	limit := g.cfg.ApprovalRequestLimit
	if limit.Max < 0 {
		return nil
	}
	w, err := g.store.CountEvent(ctx, storage.WindowEvent{Keys: []string{"approval-requests/" + principal}, Window: limit.Window, Now: now})
	if err != nil {
		return internalError(err)
	}
	if w[0].Count <= int64(limit.Max) {
		return nil
	}
	g.obs.ApprovalRequest(telemetry.ApprovalLimited)
	wait := w[0].End.Sub(now)
	secs := max(1, int((wait+time.Second-1)/time.Second))
	return &toolgatetype.Error{
		Code:       toolgatetype.CodeRateLimited,
		Message:    fmt.Sprintf("too many approval requests: at most %d in %s; retry in %d seconds", limit.Max, limit.Window, secs),
		RetryAfter: time.Duration(secs) * time.Second,
	}
}
