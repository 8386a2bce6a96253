package toolgate

import (
	"context"
	"slices"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ApproverDirectory says who approves for whom: each principal's approval
// mode, and the principals each approver approves for. Config.Approvers
// takes one, so an embedding program can answer from its own user
// directory; StaticApprovers answers from fixed maps.
//
// The directory is asked on every quote and call, so it should answer from
// memory.
type ApproverDirectory interface {
	// ApprovalMode returns the principal's approval mode; "" means
	// ApprovalModeCaller.
	ApprovalMode(ctx context.Context, principal string) (toolgatetype.ApprovalMode, error)
	// ApprovedPrincipals returns the principals approver approves for: none
	// for an approver it does not know.
	ApprovedPrincipals(ctx context.Context, approver string) ([]string, error)
}

// StaticApprovers is an ApproverDirectory from fixed maps.
type StaticApprovers struct {
	// Modes is each principal's approval mode; a principal absent is in
	// caller mode.
	Modes map[string]toolgatetype.ApprovalMode
	// Approvers maps an approver's id to the principals it approves for.
	Approvers map[string][]string
}

// ApprovalMode returns the principal's entry in Modes.
func (s StaticApprovers) ApprovalMode(_ context.Context, principal string) (toolgatetype.ApprovalMode, error) {
	return s.Modes[principal], nil
}

// ApprovedPrincipals returns the approver's entry in Approvers.
func (s StaticApprovers) ApprovedPrincipals(_ context.Context, approver string) ([]string, error) {
	return slices.Clone(s.Approvers[approver]), nil
}

// ApprovalMode returns who approves principal's calls, as Config.Approvers
// says: ApprovalModeCaller, or ApprovalModeApprover (which a mode the
// directory does not know counts as, so it loosens nothing).
func (g *Gateway) ApprovalMode(ctx context.Context, principal string) (toolgatetype.ApprovalMode, error) {
	if err := validPrincipal(principal); err != nil {
		return "", err
	}
	return g.approvalMode(ctx, principal)
}

// approvalMode returns who approves the principal's calls.
func (g *Gateway) approvalMode(ctx context.Context, principal string) (toolgatetype.ApprovalMode, error) {
	if g.approvers == nil {
		return toolgatetype.ApprovalModeCaller, nil
	}
	mode, err := g.approvers.ApprovalMode(ctx, principal)
	if err != nil {
		return "", internalError(err)
	}
	switch mode {
	case "", toolgatetype.ApprovalModeCaller:
		return toolgatetype.ApprovalModeCaller, nil
	case toolgatetype.ApprovalModeApprover:
		return toolgatetype.ApprovalModeApprover, nil
	}
	// An unknown mode from an operator's directory must not loosen anything.
	return toolgatetype.ApprovalModeApprover, nil
}

// approvedPrincipals returns the principals approver approves for.
func (g *Gateway) approvedPrincipals(ctx context.Context, approver string) ([]string, error) {
	if g.approvers == nil || approver == "" {
		return nil, nil
	}
	ps, err := g.approvers.ApprovedPrincipals(ctx, approver)
	if err != nil {
		return nil, internalError(err)
	}
	return ps, nil
}

// approves reports whether approver approves for principal.
func (g *Gateway) approves(ctx context.Context, approver, principal string) (bool, error) {
	ps, err := g.approvedPrincipals(ctx, approver)
	if err != nil {
		return false, err
	}
	return slices.Contains(ps, principal), nil
}

// standingFor is the standing approval that counts for a principal in
// mode: in approver mode, only one an approver set.
func standingFor(a *storage.Approval, mode toolgatetype.ApprovalMode) *storage.Approval {
	if a != nil && mode == toolgatetype.ApprovalModeApprover && a.ApprovedBy == "" {
		return nil
	}
	return a
}
