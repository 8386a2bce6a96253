package toolgatetype

// Approval kinds.
const (
	// ApprovalKindDigest: the call named the manifest digest it approves.
	ApprovalKindDigest ApprovalKind = "digest"
	// ApprovalKindStanding: no approval came with the call; the caller's
	// policy covered it (a standing approval, a remembered first use, or a
	// tool whose policy asks for none).
	ApprovalKindStanding ApprovalKind = "standing"
	// ApprovalKindGrant: an approver's grant, named by Execution.GrantID.
	ApprovalKindGrant ApprovalKind = "grant"
)

// Approval modes.
const (
	// ApprovalAskEveryCall: an explicit approval is required on every call,
	// even where a first approved use would otherwise be remembered.
	ApprovalAskEveryCall StandingMode = "ask_every_call"
	// ApprovalAskChargedCalls: calls whose quote total is zero need no
	// explicit approval; charged calls do.
	ApprovalAskChargedCalls StandingMode = "ask_charged_calls"
	// ApprovalNeverAsk: no explicit approval for this exact manifest digest.
	ApprovalNeverAsk StandingMode = "never_ask"
	// ApprovalFirstUse is written by the gateway after the first approved
	// call of a tool whose requirement is first_use.
	ApprovalFirstUse StandingMode = "first_use"
)
