package toolgate

import (
	"context"
	"errors"

	"github.com/toolgate/toolgate/internal/toolrun"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// SetApproval records the caller's standing approval of a tool's current
// version: ask on every call, ask only for charged calls, or never ask for
// this exact manifest digest. digest must be the current one, so a caller
// can only ever approve what they have seen. A blocked tool stays blocked.
// A principal in approver mode cannot set its own: approver_required (an
// approver sets them, with SetApprovalFor or by approving a request).
func (g *Gateway) SetApproval(ctx context.Context, principal, tool string, mode toolgatetype.StandingMode, digest string) (*toolgatetype.StandingApproval, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	am, err := g.approvalMode(ctx, principal)
	if err != nil {
		return nil, err
	}
	if am == toolgatetype.ApprovalModeApprover {
		return nil, newError(toolgatetype.CodeApproverRequired, "the standing approvals of %s are set by its approvers", principal)
	}
	return g.setApproval(ctx, principal, tool, mode, digest, "")
}

// SetApprovalFor records a standing approval, as SetApproval does, on
// behalf of a principal approver approves for; in approver mode only such
// approvals count. Any other principal is not_found.
func (g *Gateway) SetApprovalFor(ctx context.Context, approver, principal, tool string, mode toolgatetype.StandingMode, digest string) (*toolgatetype.StandingApproval, error) {
	if err := g.requireApproverOf(ctx, approver, principal); err != nil {
		return nil, err
	}
	return g.setApproval(ctx, principal, tool, mode, digest, approver)
}

// ApprovalsFor lists the standing approvals of a principal approver
// approves for, as Approvals does for the caller.
func (g *Gateway) ApprovalsFor(ctx context.Context, approver, principal string) ([]toolgatetype.ToolApproval, error) {
	if err := g.requireApproverOf(ctx, approver, principal); err != nil {
		return nil, err
	}
	return g.Approvals(ctx, principal)
}

// DeleteApprovalFor removes a standing approval of a principal approver
// approves for.
func (g *Gateway) DeleteApprovalFor(ctx context.Context, approver, principal, tool string) error {
	if err := g.requireApproverOf(ctx, approver, principal); err != nil {
		return err
	}
	return g.DeleteApproval(ctx, principal, tool)
}

// requireApproverOf refuses an approver who does not approve for
// principal, as not found: the principals of other approvers are not
// theirs to learn of.
func (g *Gateway) requireApproverOf(ctx context.Context, approver, principal string) error {
	if approver == "" {
		return newError(toolgatetype.CodeApproverRequired, "only an approver can do this")
	}
	if err := validPrincipal(principal); err != nil {
		return newError(toolgatetype.CodeInvalidRequest, "name the principal whose standing approvals these are")
	}
	ok, err := g.approves(ctx, approver, principal)
	if err != nil {
		return err
	}
	if !ok {
		return newError(toolgatetype.CodeNotFound, "you approve for no principal %q", principal)
	}
	return nil
}

// setApproval records a standing approval set by approvedBy, or by the
// caller when empty.
func (g *Gateway) setApproval(ctx context.Context, principal, tool string, mode toolgatetype.StandingMode, digest, approvedBy string) (*toolgatetype.StandingApproval, error) {
	v, err := g.lookup(tool)
	if err != nil {
		return nil, err
	}
	return g.setApprovalOf(ctx, principal, v, mode, digest, approvedBy)
}

// setApprovalOf is setApproval of the tool's version v.
func (g *Gateway) setApprovalOf(ctx context.Context, principal string, v *registry.Version, mode toolgatetype.StandingMode, digest, approvedBy string) (*toolgatetype.StandingApproval, error) {
	switch mode {
	case toolgatetype.ApprovalAskEveryCall, toolgatetype.ApprovalAskChargedCalls, toolgatetype.ApprovalNeverAsk:
	default:
		return nil, newError(toolgatetype.CodeInvalidRequest, "mode must be %s, %s or %s", toolgatetype.ApprovalAskEveryCall, toolgatetype.ApprovalAskChargedCalls, toolgatetype.ApprovalNeverAsk)
	}
	policy := EvaluatePolicy(v)
	if v.Digest == "" {
		return nil, explain(policy, newError(toolgatetype.CodeToolBlocked, "%s has no immutable version to approve", v.Tool.Slug))
	}
	if digest == "" {
		return nil, explain(policy, newError(toolgatetype.CodeApprovalRequired, "a standing approval must name the manifest digest it approves"))
	}
	if digest != v.Digest {
		return nil, explain(policy, newError(toolgatetype.CodeApprovalMismatch, "the digest is not that of %s's current version", v.Tool.Slug))
	}
	a := storage.Approval{Principal: principal, ToolID: v.Tool.ID, ManifestDigest: digest, Mode: mode, ApprovedBy: approvedBy, UpdatedAt: g.clock.Now().UTC()}
	if err := g.store.PutApproval(ctx, a); err != nil {
		return nil, internalError(err)
	}
	return &toolgatetype.StandingApproval{Mode: mode, ManifestDigest: digest}, nil
}

// Approvals lists the caller's standing approvals, each marked stale when
// the tool's digest has changed since. Approvals of tools no longer
// registered are left out.
func (g *Gateway) Approvals(ctx context.Context, principal string) ([]toolgatetype.ToolApproval, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	list, err := g.store.ListApprovals(ctx, principal)
	if err != nil {
		return nil, internalError(err)
	}
	out := make([]toolgatetype.ToolApproval, 0, len(list))
	for _, a := range list {
		v, err := g.registry.Lookup(a.ToolID)
		if err != nil {
			continue
		}
		out = append(out, toolgatetype.ToolApproval{
			Tool:             toolrun.Ref(v.Tool),
			StandingApproval: toolgatetype.StandingApproval{Mode: a.Mode, ManifestDigest: a.ManifestDigest, Stale: a.ManifestDigest != v.Digest},
		})
	}
	return out, nil
}

// DeleteApproval removes the caller's standing approval of a tool.
func (g *Gateway) DeleteApproval(ctx context.Context, principal, tool string) error {
	if err := validPrincipal(principal); err != nil {
		return err
	}
	v, err := g.lookup(tool)
	if err != nil {
		return err
	}
	err = g.store.DeleteApproval(ctx, principal, v.Tool.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return newError(toolgatetype.CodeNotFound, "there is no standing approval of %s", v.Tool.Slug)
	}
	if err != nil {
		return internalError(err)
	}
	return nil
}

// rememberFirstUse records that the caller (in caller mode) approved this
// exact digest with a call, so a first_use tool needs no approval again
// until its digest changes. A standing approval someone set is left as it
// is, and so is a first use of this digest already remembered, whether
// the caller's or one an approver chose (approving with remember
// first_use), which the caller's does not replace.
func (g *Gateway) rememberFirstUse(ctx context.Context, principal string, v *registry.Version) {
	existing, err := g.store.GetApproval(ctx, principal, v.Tool.ID)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return
	}
	if err == nil && (existing.Mode != toolgatetype.ApprovalFirstUse || existing.ManifestDigest == v.Digest) {
		return
	}
	a := storage.Approval{Principal: principal, ToolID: v.Tool.ID, ManifestDigest: v.Digest, Mode: toolgatetype.ApprovalFirstUse, UpdatedAt: g.clock.Now().UTC()}
	if err := g.store.PutApproval(ctx, a); err != nil {
		g.log.WarnContext(ctx, "could not remember first use", "tool", v.Tool.Slug, "error", err)
	}
}
