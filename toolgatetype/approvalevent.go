package toolgatetype

import "time"

// ApprovalEventType says what happened to an approval request.
type ApprovalEventType string

// Approval event types, as the webhook names them.
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
