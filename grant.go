package toolgate

import (
	"time"

	"github.com/toolgate/toolgate/internal/receipting"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// checkGrant checks the grant a call carries, found as read with the
// call's other reads (nil: none). A grant approves exactly one call: the
// approval request of this caller, for this quote, tool, manifest digest
// and input, approved by an approver and not yet used. The store checks
// the approved and unused part again, atomically, when it admits the call
// and marks the grant used (storage.Begin.GrantID).
//
// The binding is checked before the state, so a grant for another call is
// reported as such whatever became of it.
func checkGrant(c *call, found *storage.ApprovalRequest, now time.Time) error {
	if found == nil || found.Principal != c.principal {
		return errApprovalRequestNotFound(c.req.ApprovalGrant)
	}
	v := c.tool
	switch {
	case found.QuoteID != c.quoteID:
		return grantMismatch("another quote")
	case found.ToolID != v.Tool.ID:
		return grantMismatch("another tool")
	case found.ManifestDigest != v.Digest:
		return grantMismatch("another version of " + v.Tool.Slug)
	case found.InputSHA256 != receipting.InputSHA256(c.input):
		return grantMismatch("another input")
	}
	expired := !now.Before(found.ExpiresAt)
	switch found.Status {
	case storage.ApprovalApproved:
		if expired {
			return newError(toolgatetype.CodeApprovalExpired, "the approval grant expired at %s; request a new quote and approval", found.ExpiresAt.Format(time.RFC3339))
		}
		return nil
	case storage.ApprovalPending:
		if expired {
			return newError(toolgatetype.CodeApprovalExpired, "approval request %s expired at %s before anyone decided it; request a new quote and approval", found.ID, found.ExpiresAt.Format(time.RFC3339))
		}
		return newError(toolgatetype.CodeApprovalPending, "approval request %s is still waiting for an approver's decision", found.ID)
	case storage.ApprovalDenied:
		return newError(toolgatetype.CodeApprovalDenied, "approval request %s was denied by its approver", found.ID)
	}
	// Used: the quote the grant is bound to was used with it.
	return errGrantUsed()
}

func grantMismatch(what string) *toolgatetype.Error {
	return newError(toolgatetype.CodeApprovalGrantMismatch, "the approval grant was given for %s than this call's; a grant approves only the exact call it was requested for", what)
}

func errGrantUsed() *toolgatetype.Error {
	return newError(toolgatetype.CodeQuoteUsed, "the approval grant was already used by another call, together with its quote; request a new quote and approval")
}
