package toolgatetype

// ApprovalMode says who approves a principal's calls.
type ApprovalMode string

// Approval modes.
const (
	// ApprovalModeCaller, the default: the caller approves. The manifest
	// digest a call carries is its approval, as are the standing approvals
	// the caller sets.
	ApprovalModeCaller ApprovalMode = "caller"
	// ApprovalModeApprover: a person approves. A call that needs approval
	// must carry the grant of an approval request an approver approved, or
	// be covered by a standing approval an approver set; the digest alone
	// approves nothing, and the caller cannot set standing approvals.
	ApprovalModeApprover ApprovalMode = "approver"
)

// ApprovalKind is how an admitted call was approved.
type ApprovalKind string

// Approval kinds.
const (
	// ApprovalKindDigest: the call named the manifest digest it approves.
	ApprovalKindDigest ApprovalKind = "digest"
	// ApprovalKindStanding: no approval came with the call; the caller's
	// policy covered it (a standing approval, a remembered first use, or a
	// tool whose policy asks for none).
	ApprovalKindStanding ApprovalKind = "standing"
	// ApprovalKindGrant: an approver's grant, named by the execution's grant id.
	ApprovalKindGrant ApprovalKind = "grant"
)

// StandingMode is what a standing approval allows: how it treats future
// calls of the tool version it was given for.
type StandingMode string

// Standing modes.
const (
	// ApprovalAskEveryCall: an explicit approval is required on every call,
	// even where a first approved use would otherwise be remembered.
	ApprovalAskEveryCall StandingMode = "ask_every_call"
	// ApprovalAskChargedCalls: calls whose quote total is zero need no
	// explicit approval; charged calls do.
	ApprovalAskChargedCalls StandingMode = "ask_charged_calls"
	// ApprovalNeverAsk: no explicit approval for this exact manifest digest.
	ApprovalNeverAsk StandingMode = "never_ask"
	// ApprovalFirstUse covers the later calls of one exact manifest digest
	// of a tool whose requirement is first_use, and nothing else. In caller
	// mode the gateway writes it after the caller's first approved call; in
	// approver mode only an approver writes it, by approving a request with
	// it as Decision.Remember ("don't ask again for this version").
	ApprovalFirstUse StandingMode = "first_use"
	// ApprovalOnce is no standing approval: it is the Remember of an
	// approval request approved for its one call only, which records
	// nothing for later calls.
	ApprovalOnce StandingMode = "once"
)

// Standing reports whether an approve with m as its Remember records a
// standing approval: any mode but "" and ApprovalOnce.
func (m StandingMode) Standing() bool {
	return m != "" && m != ApprovalOnce
}

// ToolApproval is a standing approval together with the tool it covers.
type ToolApproval struct {
	Tool ToolRef `json:"tool"`
	StandingApproval
}
