package toolgatetype

import (
	"encoding/json"
	"time"
)

// ToolCallRequest is one call of a tool as an agent protocol makes it (an
// MCP tools/call): a tool and its input, with no quote of the caller's own.
// The gateway quotes it on the caller's behalf (Gateway.CallTool).
type ToolCallRequest struct {
	// Tool is the tool's slug or id.
	Tool string
	// Input is the tool's input object.
	Input json.RawMessage
	// IdempotencyKey identifies the logical call: a retry under it gets
	// the first run's result, or carries on with that run.
	IdempotencyKey string
	// Approval is the caller's own approval of the call; nil when it gives
	// none. It counts only for a principal in caller mode: in approver mode
	// only an approver approves.
	Approval *CallerApproval
}

// CallerApproval is a caller-mode approval of one tool call: the manifest
// digest the user approved, given unasked (an agent that asked its user
// itself) or as the answer to the approval a ToolCallOutcome asked for.
type CallerApproval struct {
	// ManifestDigest is the digest the user approved. The call is refused
	// unless it is the tool's current one (approval_mismatch).
	ManifestDigest string
	// QuoteID is, in an answer, the quote the user was asked to approve
	// the call under (ToolCallApproval.QuoteID): the call runs under it,
	// as asked. Empty for an approval given unasked, for which the call
	// is quoted.
	QuoteID string
	// Declined marks an answer that approves nothing: the call does not
	// run (ToolCallApproval.Declined).
	Declined bool
	// Remember, when set, also records a standing approval of
	// ManifestDigest in this mode (ApprovalNeverAsk, say) before the call
	// runs; the call runs even if it cannot be recorded. Empty approves
	// this call only.
	Remember StandingMode
}

// ToolCallOutcome is what became of a ToolCallRequest: exactly one of
// Result, Approval and Refusal is set.
type ToolCallOutcome struct {
	// Result is the call's result: run now, or by an earlier call under
	// the same key (Replayed).
	Result *CallResult
	// Approval is the approval the call lacks. Nothing was run or charged.
	Approval *ToolCallApproval
	// Refusal is why the gateway refused the call, an *Error as
	// Gateway.Call returns one. Nothing was run or charged for this
	// request.
	Refusal *Error
	// LapsedGrant is the id of the approval request whose grant the call
	// carried, when it was refused because that grant can no longer be
	// used: its quote expired or was used, or the tool changed, since it
	// was found. A grant serves one call: the same call made anew asks an
	// approver again.
	LapsedGrant string
}

// ToolCallApproval is the approval a tool call lacks. In caller mode it is
// the caller's: of ManifestDigest, at TotalUSD, under QuoteID; or, once
// Declined, none. In approver mode it is an approver's decision of Request.
type ToolCallApproval struct {
	// Mode is who approves the caller's calls.
	Mode ApprovalMode

	// QuoteID, Tool, ManifestDigest, TotalUSD and Requirement are what the
	// caller is asked to approve (caller mode): one call of this exact
	// version at this total, under this quote, as the policy requires. An
	// answer names QuoteID and ManifestDigest back (CallerApproval).
	QuoteID        string
	Tool           ToolRef
	ManifestDigest string
	TotalUSD       string
	Requirement    Requirement
	// ExpiresAt is the quote's expiry: an answer that comes after it
	// approves nothing.
	ExpiresAt time.Time
	// Declined says the caller's answer (CallerApproval.Declined)
	// approved nothing. Nothing was quoted: the fields above are empty.
	Declined bool

	// Request is the approval request an approver decides (approver
	// mode): made for this call, or found from an earlier try of the same
	// call (principal, tool and input). Its Status is pending, or denied,
	// which the same call is told until the request's ExpiresAt, and after
	// that asks anew.
	Request *ApprovalRequest
	// Expired is the caller's earlier request for this call that an
	// approver approved but that expired unused, when Request replaces it.
	Expired *ApprovalRequest
}
