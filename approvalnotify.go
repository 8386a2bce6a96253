package toolgate

import (
	"context"

	"github.com/toolgate/toolgate/toolgatetype"
)

// ApprovalNotifier is told of each approval event, after the store has it,
// so that people can be told (package webhook sends them as signed
// webhooks). NotifyApproval runs on the goroutine of the request that
// caused the event and must not block: a slow or failing notification must
// never delay or fail a request.
type ApprovalNotifier interface {
	NotifyApproval(ctx context.Context, ev toolgatetype.ApprovalEvent)
}

// notify tells the notifier, if any, of an event.
func (g *Gateway) notify(ctx context.Context, typ toolgatetype.ApprovalEventType, r *toolgatetype.ApprovalRequest) {
	if g.notifier == nil {
		return
	}
	g.notifier.NotifyApproval(context.WithoutCancel(ctx), toolgatetype.ApprovalEvent{Type: typ, Timestamp: g.clock.Now().UTC(), Request: *r})
}

// notifyAmbiguous tells the approvers' notifier, if any, of an execution
// whose outcome is unknown, so that a person finds out and resolves it.
func (g *Gateway) notifyAmbiguous(ctx context.Context, e toolgatetype.ExecutionSummary) {
	if g.notifier == nil {
		return
	}
	g.notifier.NotifyApproval(context.WithoutCancel(ctx), toolgatetype.ApprovalEvent{Type: toolgatetype.ExecutionAmbiguous, Timestamp: g.clock.Now().UTC(), Execution: &e})
}
