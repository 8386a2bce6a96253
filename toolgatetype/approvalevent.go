package toolgatetype

import "time"

// ApprovalEventType says what happened to an approval request.
type ApprovalEventType string

// Approval event types, as the webhook names them.
const (
	ApprovalRequestCreated ApprovalEventType = "approval_request.created"
	ApprovalRequestDecided ApprovalEventType = "approval_request.decided"
	// ExecutionAmbiguous: a call ended ambiguous, and an approver of its
	// principal has to find out what the provider did and resolve it.
	ExecutionAmbiguous ApprovalEventType = "execution.ambiguous"
	// BudgetThresholdCrossed: a budget window's charged use reached one of
	// its alert fractions. Sent once per budget, window, fraction and
	// period across every gateway sharing the store.
	BudgetThresholdCrossed ApprovalEventType = "budget.threshold"
	// BudgetLimitReachedEvent: a call was refused because a budget's window was
	// short. Sent once per budget, window and period.
	BudgetLimitReachedEvent ApprovalEventType = "budget.limit_reached"
)

// ApprovalEvent is something the people who approve a principal's calls
// are told of: a new approval request, a decision of one, or an execution
// whose outcome is unknown.
type ApprovalEvent struct {
	Type ApprovalEventType
	// Timestamp is when it happened, by the gateway's clock.
	Timestamp time.Time
	// Request is the request as it stands after the event, for the
	// approval_request events.
	Request ApprovalRequest
	// Execution is the execution, for ExecutionAmbiguous; nil otherwise.
	Execution *ExecutionSummary
	// Threshold is the crossing, for BudgetThresholdCrossed; nil otherwise.
	// ID is then its stable webhook-id.
	Threshold *BudgetThreshold
	// LimitReached is the refusal's window, for BudgetLimitReached; nil
	// otherwise.
	LimitReached *BudgetLimitReached
	// ID is the event's stable id, its webhook-id.
	ID string
}
