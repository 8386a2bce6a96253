package toolgatetype

// Approval modes (contract section 14).
const (
	// ApprovalModeCaller, the default: the caller approves. The manifest
	// digest a call carries is its approval (contract section 6), as are the
	// standing approvals the caller sets.
	ApprovalModeCaller ApprovalMode = "caller"
	// ApprovalModeApprover: a person approves. A call that needs approval
	// must carry the grant of an approval request an approver approved, or
	// be covered by a standing approval an approver set; the digest alone
	// approves nothing, and the caller cannot set standing approvals.
	ApprovalModeApprover ApprovalMode = "approver"
)
