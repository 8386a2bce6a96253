package toolgatetype

import "encoding/json"

// CallRequest is one call of a tool under a quote.
type CallRequest struct {
	// Tool is the tool's slug or id.
	Tool string
	// QuoteID is the id of an open quote of this caller for this tool.
	QuoteID string
	// Input is the tool's input object.
	Input json.RawMessage
	// ApprovalDigest is the manifest digest the user approved; empty when
	// the caller sends no approval.
	ApprovalDigest string
	// ApprovalGrant is the id of an approval request that an approver
	// approved for this very call (Gateway.RequestApproval); empty when the
	// call carries none. It approves the call whatever the principal's
	// approval mode, and the call uses it up.
	ApprovalGrant string
	// IdempotencyKey identifies the logical call; retries reuse it.
	IdempotencyKey string
}

// CallResult is the outcome of a call.
type CallResult struct {
	Execution Execution
	// Body is the execution result exactly as stored: a replay returns the
	// same bytes as the original call.
	Body []byte
	// Replayed is true when the result is a stored one returned for a retry.
	Replayed bool
	// IdempotencyKey is the key the call was made under; with the same
	// request it gets this result again.
	IdempotencyKey string
}
