package toolgate

import (
	"context"
	"time"
)

// ApprovalEventType says what happened to an approval request.
type ApprovalEventType string

// Approval event types, as the webhook names them (contract section 14).
const (
	ApprovalRequestCreated ApprovalEventType = "approval_request.created"
	ApprovalRequestDecided ApprovalEventType = "approval_request.decided"
)

// ApprovalEvent is a new approval request, or a decision of one.
type ApprovalEvent struct {
	Type ApprovalEventType
	// Timestamp is when it happened, by the gateway's clock.
	Timestamp time.Time
	// Request is the request as it stands after the event.
	Request ApprovalRequest
}

// ApprovalNotifier is told of each approval event, after the store has it,
// so that people can be told (package webhook sends them as signed
// webhooks). NotifyApproval runs on the goroutine of the request that
// caused the event and must not block: a slow or failing notification must
// never delay or fail a request.
type ApprovalNotifier interface {
	NotifyApproval(ctx context.Context, ev ApprovalEvent)
}

// notify tells the notifier, if any, of an event.
func (g *Gateway) notify(ctx context.Context, typ ApprovalEventType, r *ApprovalRequest) {
	if g.notifier == nil {
		return
	}
	g.notifier.NotifyApproval(context.WithoutCancel(ctx), ApprovalEvent{Type: typ, Timestamp: g.clock.Now().UTC(), Request: *r})
}
