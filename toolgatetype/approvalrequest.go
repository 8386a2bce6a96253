package toolgatetype

import (
	"encoding/json"
	"time"
)

// ApprovalStatus is an approval request's state as callers and approvers
// see it: the stored state, or expired as soon as the request's ExpiresAt
// has passed while it was still pending or approved and unused. The store
// keeps the same type (storage.ApprovalStatus) but never stores expired.
type ApprovalStatus string

// Approval request statuses.
const (
	ApprovalStatusPending  ApprovalStatus = "pending"
	ApprovalStatusApproved ApprovalStatus = "approved"
	ApprovalStatusDenied   ApprovalStatus = "denied"
	ApprovalStatusExpired  ApprovalStatus = "expired"
	ApprovalStatusUsed     ApprovalStatus = "used"
	// ApprovalStatusAll is not a status: as ApprovalListOptions.Status it
	// lists requests of every status.
	ApprovalStatusAll ApprovalStatus = "all"
)

// ApprovalRequest is a caller's request that an approver approve one call:
// one quote, of one tool version, with one input. Approved, its ID is the
// grant that call carries (CallRequest.ApprovalGrant), good for that call
// only.
type ApprovalRequest struct {
	ID             string         `json:"id"`
	Status         ApprovalStatus `json:"status"`
	Principal      string         `json:"principal"`
	QuoteID        string         `json:"quoteId"`
	Tool           ToolRef        `json:"tool"`
	ManifestDigest string         `json:"manifestDigest"`
	PriceUSD       string         `json:"priceUsd"`
	FeeUSD         string         `json:"feeUsd"`
	TotalUSD       string         `json:"totalUsd"`
	// Input is the call's input, canonical (RFC 8785), as the caller sent it.
	Input json.RawMessage `json:"input"`
	// InputSHA256 is the lowercase hex SHA-256 of Input.
	InputSHA256 string    `json:"inputSha256"`
	CreatedAt   time.Time `json:"createdAt"`
	// ExpiresAt is when the request ends, the gateway's approval TTL after
	// it was made: after it the request can be neither decided nor used.
	// Its quote lives at least as long.
	ExpiresAt time.Time `json:"expiresAt"`
	// DecidedBy and DecidedAt say which approver decided, and when.
	DecidedBy string     `json:"decidedBy,omitempty"`
	DecidedAt *time.Time `json:"decidedAt,omitempty"`
	// Remember is what an approve applied: ApprovalOnce for this call only,
	// or the standing approval the approver recorded with it. Empty until
	// approved, and on a denied request.
	Remember StandingMode `json:"remember,omitempty"`
	// ExecutionID is the execution that used the grant, once used.
	ExecutionID string `json:"executionId,omitempty"`
	// ApproveURL is where a person decides it. The gateway knows no routes:
	// the layer that serves the approval page fills it in.
	ApproveURL string `json:"approveUrl,omitempty"`
}

// ApprovalInput is what a caller asks to have approved: one call, under
// the quote, with this input.
type ApprovalInput struct {
	QuoteID string
	Input   json.RawMessage
}

// Decision is an approver's decision of an approval request.
type Decision struct {
	// Approve approves the call; false denies it.
	Approve bool
	// Remember, on an approve, also records a standing approval of the
	// tool's digest for the request's principal: ApprovalNeverAsk,
	// ApprovalAskChargedCalls, or ApprovalFirstUse (only for a tool whose
	// requirement is first_use: later calls of this version do not ask).
	// Empty or ApprovalOnce approves this call only, whatever the tool's
	// requirement, and the request records ApprovalOnce. Ignored on a deny.
	Remember StandingMode
}

// ApprovalListOptions select a page of approval requests.
type ApprovalListOptions struct {
	// Status lists the requests of one status; "" means pending, and
	// ApprovalStatusAll every status.
	Status ApprovalStatus
	// Cursor continues a listing where the page that gave it ended.
	Cursor string
	// Limit is the page size, 1 to 100; 0 means 20.
	Limit int
}

// ApprovalRequestList is a page of approval requests, newest first.
type ApprovalRequestList struct {
	ApprovalRequests []ApprovalRequest `json:"approvalRequests"`
	// NextCursor continues the listing; nil on the last page.
	NextCursor *string `json:"nextCursor"`
}
