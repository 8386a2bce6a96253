package toolgate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/events"
	"github.com/toolgate/toolgate/internal/receipting"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/internal/toolrun"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// SetApproval records the caller's standing approval of a tool's current
// version, whose digest it must name, so a caller only ever approves what
// they have seen. A principal in approver mode cannot set its own
// (approver_required).
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

// ApprovalMode returns who approves principal's calls, as Config.Approvers
// says (see toolgatetype.ApproverDirectory).
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

// An approver approves for the principals its directory names, and for
// the members of the budgets whose Approvers name it and of their
// descendants (BudgetDefinition.Approvers), token subjects joined by their
// claims included. Those subjects are known only to their tokens, so an
// approval request keeps the budgets its principal counted in when it was
// made (storage.ApprovalRequest.Budgets), and an approver's checks read
// them there: on every instance sharing the store, whatever the config
// names.

// approvedPrincipals returns the principals approver approves for by
// name: its directory's, and the members its budgets name.
func (g *Gateway) approvedPrincipals(ctx context.Context, approver string) ([]string, error) {
	if approver == "" {
		return nil, nil
	}
	var ps []string
	if g.approvers != nil {
		var err error
		if ps, err = g.approvers.ApprovedPrincipals(ctx, approver); err != nil {
			return nil, internalError(err)
		}
	}
	for _, n := range g.visibleBudgets(approver) {
		for _, m := range n.Members {
			if !slices.Contains(ps, m) {
				ps = append(ps, m)
			}
		}
	}
	return ps, nil
}

// approvedBudgets returns the ids of the budgets approver approves for:
// those whose Approvers name it, and their descendants.
func (g *Gateway) approvedBudgets(approver string) []string {
	if approver == "" {
		return nil
	}
	return ruling.BudgetIDs(g.visibleBudgets(approver))
}

// meets reports whether a and b share an id.
func meets(a, b []string) bool {
	return slices.ContainsFunc(a, func(id string) bool { return slices.Contains(b, id) })
}

// approves reports whether approver approves for principal: by name, by
// the budgets the principal counts in as a member (or as everyone does),
// or, for a token subject, by the budgets its latest approval request
// counted in, which is all a gateway learns of a subject's claims without
// its token.
func (g *Gateway) approves(ctx context.Context, approver, principal string) (bool, error) {
	ps, err := g.approvedPrincipals(ctx, approver)
	if err != nil || slices.Contains(ps, principal) {
		return err == nil, err
	}
	mine := g.approvedBudgets(approver)
	if len(mine) == 0 {
		return false, nil
	}
	if tree := g.budgets.Load(); tree != nil && meets(ruling.BudgetIDs(tree.For(principal, nil)), mine) {
		return true, nil
	}
	latest, err := g.store.ListApprovalRequests(ctx, storage.ApprovalRequestFilter{Principals: []string{principal}, Limit: 1})
	if err != nil {
		return false, internalError(err)
	}
	return len(latest) == 1 && len(latest[0].Approvers) == 0 && meets(latest[0].Budgets, mine), nil
}

// approvesRequest reports whether approver may see and decide r: the
// approvers a rule named alone, when it named some; else its principal's
// approvers, and the approvers of the budgets it counted in.
func (g *Gateway) approvesRequest(ctx context.Context, approver string, r storage.ApprovalRequest) (bool, error) {
	if len(r.Approvers) > 0 {
		return slices.Contains(r.Approvers, approver), nil
	}
	if meets(r.Budgets, g.approvedBudgets(approver)) {
		return true, nil
	}
	ps, err := g.approvedPrincipals(ctx, approver)
	return slices.Contains(ps, r.Principal), err
}

// standingFor is the standing approval that counts for a principal in
// mode: in approver mode, only one an approver set.
func standingFor(a *storage.Approval, mode toolgatetype.ApprovalMode) *storage.Approval {
	if a != nil && mode == toolgatetype.ApprovalModeApprover && a.ApprovedBy == "" {
		return nil
	}
	return a
}

// notify tells the notifier, if any, of an event.
func (g *Gateway) notify(ctx context.Context, typ toolgatetype.ApprovalEventType, r *toolgatetype.ApprovalRequest) {
	if g.notifier == nil {
		return
	}
	g.notifier.NotifyApproval(context.WithoutCancel(ctx), toolgatetype.ApprovalEvent{Type: typ, Timestamp: g.clock.Now().UTC(), Request: *r})
}

// notifyAmbiguous tells the approvers' notifier, if any, of an execution
// whose outcome is unknown, so that a person finds out and resolves it.
func (g *Gateway) notifyAmbiguous(ctx context.Context, e toolgatetype.ExecutionSummary) {
	if g.notifier == nil {
		return
	}
	g.notifier.NotifyApproval(context.WithoutCancel(ctx), toolgatetype.ApprovalEvent{Type: toolgatetype.ExecutionAmbiguous, Timestamp: g.clock.Now().UTC(), Execution: &e})
}

// RequestApproval asks the approvers of principal to approve one call: the
// caller's open quote with input, checked first (input_invalid,
// tool_blocked) so a person never reviews a call that cannot run. The
// request lives Config.ApprovalTTL and extends the quote's life to its
// own. The same request pending already is answered instead of a new one,
// on every gateway sharing the store: a person is asked once.
func (g *Gateway) RequestApproval(ctx context.Context, principal string, in toolgatetype.ApprovalInput) (*toolgatetype.ApprovalRequest, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	quoteID, err := uuid.Parse(in.QuoteID)
	if err != nil {
		return nil, newError(toolgatetype.CodeInvalidRequest, "quoteId must be the id of a quote (a UUID)")
	}
	input, err := canonicalInput(in.Input)
	if err != nil {
		return nil, err
	}
	return g.requestApproval(ctx, &PreparedCall{principal: principal, input: input}, quoteID, nil, false)
}

// requestApproval is RequestApproval of the call p under quote quoteID. A
// call prepared without its tool is of the quote's tool. counted are the
// budgets the call counts in when known (decided once, with its quote);
// else they are found here.
func (g *Gateway) requestApproval(ctx context.Context, p *PreparedCall, quoteID uuid.UUID, counted []*budgets.Node, known bool) (*toolgatetype.ApprovalRequest, error) {
	principal, input := p.principal, p.input
	found, err := g.store.GetQuote(ctx, quoteID)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, internalError(err)
	}
	if err != nil || found.Principal != principal {
		return nil, newError(toolgatetype.CodeQuoteNotFound, "no quote %s exists for this caller", quoteID)
	}
	if p.tool == nil {
		v, err := g.registry.Lookup(found.ToolID)
		if err != nil {
			return nil, newError(toolgatetype.CodeQuoteOutdated, "the tool of quote %s is no longer registered; request a new quote", quoteID)
		}
		hide, ms := g.hidden(ctx, principal, v, true)
		if hide {
			return nil, errToolNotFound(found.ToolSlug)
		}
		p.tool, p.hideMatches = v, ms
	}
	v := p.tool
	now := g.clock.Now().UTC()
	q, err := g.checkQuote(p, quoteID, "", &found, now)
	if err != nil {
		return nil, err
	}
	if policy := EvaluatePolicy(v); !policy.Callable {
		return nil, blockedError(v, policy)
	}
	if err := p.inputError(); err != nil {
		return nil, err
	}
	if !known {
		counted = g.callBudgets(ctx, principal)
	}
	if !p.ruledDone && g.rules.Load().Len() > 0 {
		mode, err := g.approvalMode(ctx, principal)
		if err != nil {
			return nil, err
		}
		g.ruleCall(ctx, p, counted, mode)
	}
	if err := p.ruled.Refusal(); err != nil {
		return nil, err
	}
	rec := storage.ApprovalRequest{
		ID:             uuid.New(),
		Principal:      principal,
		QuoteID:        q.ID,
		ToolID:         q.ToolID,
		ToolSlug:       q.ToolSlug,
		ManifestDigest: q.ManifestDigest,
		PriceUSD:       q.PriceUSD,
		FeeUSD:         q.FeeUSD,
		TotalUSD:       q.TotalUSD,
		Input:          input,
		InputSHA256:    receipting.InputSHA256(input),
		Status:         storage.ApprovalPending,
		CreatedAt:      now,
		ExpiresAt:      now.Add(g.cfg.ApprovalTTL),
		// Only the approvers an ask rule names may see and decide it.
		Approvers: p.ruled.NamedApprovers(),
		// The approvers of these budgets see it, on every instance.
		Budgets: ruling.BudgetIDs(counted),
	}
	if err := g.countApprovalRequest(ctx, principal, now); err != nil {
		return nil, err
	}
	if g.events != nil {
		ev, err := events.ApprovalRequest(toolgatetype.ApprovalRequestCreated, g.approvalView(rec, now), now)
		if err != nil {
			return nil, internalError(err)
		}
		rec.Event = &ev
	}
	err = g.store.CreateApprovalRequest(ctx, rec)
	var same *storage.PendingRequestError
	switch {
	case errors.As(err, &same):
		// Asked again, or twice at once: the person sees one request.
		g.obs.ApprovalRequest(telemetry.ApprovalSame)
		out := g.approvalView(same.Pending, now)
		return &out, nil
	case errors.Is(err, storage.ErrQuoteNotFound):
		return nil, newError(toolgatetype.CodeQuoteNotFound, "no quote %s exists for this caller", quoteID)
	case errors.Is(err, storage.ErrQuoteUsed):
		return nil, newError(toolgatetype.CodeQuoteUsed, "quote %s was already used by another call; request a new quote", quoteID)
	case errors.Is(err, storage.ErrQuoteExpired):
		return nil, newError(toolgatetype.CodeQuoteExpired, "quote %s expired at %s; request a new quote", quoteID, q.ExpiresAt.Format(time.RFC3339))
	case err != nil:
		return nil, internalError(err)
	}
	rec.Event = nil
	out := g.approvalView(rec, now)
	if g.events != nil {
		g.events.Wake()
	}
	g.notify(ctx, toolgatetype.ApprovalRequestCreated, &out)
	g.obs.ApprovalRequest(telemetry.ApprovalCreated)
	return &out, nil
}

// ApprovalRequest returns one of the caller's own approval requests;
// anyone else's is reported as not found.
func (g *Gateway) ApprovalRequest(ctx context.Context, principal, id string) (*toolgatetype.ApprovalRequest, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	r, err := g.getApprovalRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Principal != principal {
		return nil, errApprovalRequestNotFound(id)
	}
	out := g.approvalView(r, g.clock.Now().UTC())
	return &out, nil
}

// ApprovalRequestFor returns an approval request of one of the principals
// approver approves for; any other is reported as not found.
func (g *Gateway) ApprovalRequestFor(ctx context.Context, approver, id string) (*toolgatetype.ApprovalRequest, error) {
	r, err := g.approverRequest(ctx, approver, id)
	if err != nil {
		return nil, err
	}
	out := g.approvalView(r, g.clock.Now().UTC())
	return &out, nil
}

// approverRequest reads a request approver may see.
func (g *Gateway) approverRequest(ctx context.Context, approver, id string) (storage.ApprovalRequest, error) {
	if approver == "" {
		return storage.ApprovalRequest{}, newError(toolgatetype.CodeApproverRequired, "only an approver can do this")
	}
	r, err := g.getApprovalRequest(ctx, id)
	if err != nil {
		return storage.ApprovalRequest{}, err
	}
	ok, err := g.approvesRequest(ctx, approver, r)
	if err != nil {
		return storage.ApprovalRequest{}, err
	}
	if !ok {
		return storage.ApprovalRequest{}, errApprovalRequestNotFound(id)
	}
	return r, nil
}

// getApprovalRequest reads a request by its id as given.
func (g *Gateway) getApprovalRequest(ctx context.Context, id string) (storage.ApprovalRequest, error) {
	rid, err := uuid.Parse(id)
	if err != nil {
		return storage.ApprovalRequest{}, errApprovalRequestNotFound(id)
	}
	r, err := g.store.GetApprovalRequest(ctx, rid)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return storage.ApprovalRequest{}, errApprovalRequestNotFound(id)
	case err != nil:
		return storage.ApprovalRequest{}, internalError(err)
	}
	return r, nil
}

func errApprovalRequestNotFound(id string) *toolgatetype.Error {
	return newError(toolgatetype.CodeApprovalRequestNotFound, "no approval request %q exists for you", id)
}

// DecideApproval approves or denies an approval request of one of the
// principals approver approves for (any other is not found), as d says
// (see [toolgatetype.Decision]). A decision is final: of decisions made at
// once exactly one wins, and the others get approval_already_decided.
func (g *Gateway) DecideApproval(ctx context.Context, approver, id string, d toolgatetype.Decision) (*toolgatetype.ApprovalRequest, error) {
	remember := d.Remember
	switch {
	case !d.Approve:
		remember = ""
	case remember == "":
		remember = toolgatetype.ApprovalOnce
	}
	switch remember {
	case "", toolgatetype.ApprovalOnce, toolgatetype.ApprovalFirstUse, toolgatetype.ApprovalNeverAsk, toolgatetype.ApprovalAskChargedCalls:
	default:
		return nil, errRememberChoice()
	}
	r, err := g.approverRequest(ctx, approver, id)
	if err != nil {
		return nil, err
	}
	if remember == toolgatetype.ApprovalFirstUse {
		if err := g.firstUseChoice(r); err != nil {
			return nil, err
		}
	}
	now := g.clock.Now().UTC()
	decision := storage.ApprovalDecision{ID: r.ID, Approve: d.Approve, DecidedBy: approver, Remember: remember, Now: now}
	if g.events != nil {
		// The request as the decision leaves it, written with the decision.
		ev, err := events.ApprovalRequest(toolgatetype.ApprovalRequestDecided, g.approvalView(decidedAs(r, decision), now), now)
		if err != nil {
			return nil, internalError(err)
		}
		decision.Event = &ev
	}
	decided, err := g.store.DecideApprovalRequest(ctx, decision)
	switch {
	case errors.Is(err, storage.ErrAlreadyDecided):
		return nil, newError(toolgatetype.CodeApprovalAlreadyDecided, "approval request %s was already decided; a decision is final", r.ID)
	case errors.Is(err, storage.ErrApprovalExpired):
		return nil, newError(toolgatetype.CodeApprovalExpired, "approval request %s expired at %s", r.ID, r.ExpiresAt.Format(time.RFC3339))
	case errors.Is(err, storage.ErrNotFound):
		return nil, errApprovalRequestNotFound(id)
	case err != nil:
		return nil, internalError(err)
	}
	out := g.approvalView(decided, now)
	if g.events != nil {
		g.events.Wake()
	}
	g.notify(ctx, toolgatetype.ApprovalRequestDecided, &out)
	if d.Approve {
		g.obs.ApprovalRequest(telemetry.ApprovalApproved)
	} else {
		g.obs.ApprovalRequest(telemetry.ApprovalDenied)
	}
	return &out, nil
}

// decidedAs is r as the store records d on it (storage.DecideApprovalRequest).
func decidedAs(r storage.ApprovalRequest, d storage.ApprovalDecision) storage.ApprovalRequest {
	r.Status, r.DecidedBy, r.DecidedAt = storage.ApprovalDenied, d.DecidedBy, d.Now
	if d.Approve {
		r.Status, r.Remember = storage.ApprovalApproved, d.Remember
	}
	return r
}

// errRememberChoice refuses a remember that is not one of the choices.
func errRememberChoice() *toolgatetype.Error {
	return newError(toolgatetype.CodeInvalidRequest, "remember must be %s, %s, %s or %s, or left out (this call only)",
		toolgatetype.ApprovalOnce, toolgatetype.ApprovalFirstUse, toolgatetype.ApprovalNeverAsk, toolgatetype.ApprovalAskChargedCalls)
}

// firstUseChoice refuses remember first_use for a request whose tool's
// requirement, as registered now, is not first_use: such a standing
// approval would cover none of its later calls.
func (g *Gateway) firstUseChoice(r storage.ApprovalRequest) error {
	v, err := g.registry.Lookup(r.ToolID)
	if err != nil {
		return newError(toolgatetype.CodeInvalidRequest, "remember %s needs a tool whose requirement is first_use; %s is no longer registered", toolgatetype.ApprovalFirstUse, r.ToolSlug)
	}
	if got := EvaluatePolicy(v).Approval.Requirement; got != toolgatetype.RequirementFirstUse {
		return newError(toolgatetype.CodeInvalidRequest, "remember %s covers only a tool whose requirement is first_use, and %s's is %s: use %s or %s to stop asking",
			toolgatetype.ApprovalFirstUse, v.Tool.Slug, got, toolgatetype.ApprovalNeverAsk, toolgatetype.ApprovalAskChargedCalls)
	}
	return nil
}

// ListApprovalRequests lists the approval requests of the principals
// approver approves for, newest first, pending ones unless opts say
// otherwise. An approver who approves for no one gets an empty list.
func (g *Gateway) ListApprovalRequests(ctx context.Context, approver string, opts toolgatetype.ApprovalListOptions) (*toolgatetype.ApprovalRequestList, error) {
	if approver == "" {
		return nil, newError(toolgatetype.CodeApproverRequired, "only an approver can list approval requests")
	}
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = toolgatetype.DefaultListLimit
	case limit < 1 || limit > toolgatetype.MaxListLimit:
		return nil, newError(toolgatetype.CodeInvalidRequest, "limit must be from 1 to %d", toolgatetype.MaxListLimit)
	}
	now := g.clock.Now().UTC()
	f, err := statusFilter(opts.Status, now)
	if err != nil {
		return nil, err
	}
	if opts.Cursor != "" {
		if f.After, err = decodeApprovalCursor(opts.Cursor); err != nil {
			return nil, err
		}
	}
	if f.Principals, err = g.approvedPrincipals(ctx, approver); err != nil {
		return nil, err
	}
	// With the requests of the members of its budgets, whom the config
	// may not name, and those of other principals that a rule named the
	// approver for.
	f.Budgets = g.approvedBudgets(approver)
	f.Approver = approver
	out := &toolgatetype.ApprovalRequestList{ApprovalRequests: []toolgatetype.ApprovalRequest{}}
	f.Limit = limit + 1 // one more tells whether a next page exists
	list, err := g.store.ListApprovalRequests(ctx, f)
	if err != nil {
		return nil, internalError(err)
	}
	if len(list) > limit {
		list = list[:limit]
		last := list[limit-1]
		next := encodeApprovalCursor(storage.ApprovalCursor{CreatedAt: last.CreatedAt, ID: last.ID})
		out.NextCursor = &next
	}
	for _, r := range list {
		out.ApprovalRequests = append(out.ApprovalRequests, g.approvalView(r, now))
	}
	return out, nil
}

// statusFilter is the store filter of a shown status at now.
func statusFilter(status toolgatetype.ApprovalStatus, now time.Time) (storage.ApprovalRequestFilter, error) {
	var f storage.ApprovalRequestFilter
	switch status {
	case "", toolgatetype.ApprovalStatusPending:
		f.Statuses, f.LiveAt = []storage.ApprovalStatus{storage.ApprovalPending}, now
	case toolgatetype.ApprovalStatusApproved:
		f.Statuses, f.LiveAt = []storage.ApprovalStatus{storage.ApprovalApproved}, now
	case toolgatetype.ApprovalStatusDenied:
		f.Statuses = []storage.ApprovalStatus{storage.ApprovalDenied}
	case toolgatetype.ApprovalStatusUsed:
		f.Statuses = []storage.ApprovalStatus{storage.ApprovalUsed}
	case toolgatetype.ApprovalStatusExpired:
		f.Statuses, f.ExpiredAt = []storage.ApprovalStatus{storage.ApprovalPending, storage.ApprovalApproved}, now
	case toolgatetype.ApprovalStatusAll:
	default:
		return f, newError(toolgatetype.CodeInvalidRequest, "status must be pending, approved, denied, expired, used or all")
	}
	return f, nil
}

// encodeApprovalCursor makes a listing position opaque to callers.
func encodeApprovalCursor(c storage.ApprovalCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.CreatedAt.UnixNano(), 10) + "." + c.ID.String()))
}

func decodeApprovalCursor(s string) (*storage.ApprovalCursor, error) {
	bad := newError(toolgatetype.CodeInvalidRequest, "cursor is not one this gateway gave")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	nanos, id, ok := strings.Cut(string(raw), ".")
	if !ok {
		return nil, bad
	}
	n, err := strconv.ParseInt(nanos, 10, 64)
	if err != nil {
		return nil, bad
	}
	uid, err := uuid.Parse(id)
	if err != nil {
		return nil, bad
	}
	return &storage.ApprovalCursor{CreatedAt: time.Unix(0, n).UTC(), ID: uid}, nil
}

// approvalView shows a stored request as of now.
func (g *Gateway) approvalView(r storage.ApprovalRequest, now time.Time) toolgatetype.ApprovalRequest {
	tool := toolgatetype.ToolRef{ID: r.ToolID, Slug: r.ToolSlug, Name: r.ToolSlug}
	if v, err := g.registry.Lookup(r.ToolID); err == nil {
		tool = toolrun.Ref(v.Tool)
	}
	out := toolgatetype.ApprovalRequest{
		ID:             r.ID.String(),
		Status:         r.Status,
		Principal:      r.Principal,
		QuoteID:        r.QuoteID.String(),
		Tool:           tool,
		ManifestDigest: r.ManifestDigest,
		PriceUSD:       toolgatetype.FormatUSD(r.PriceUSD),
		FeeUSD:         toolgatetype.FormatUSD(r.FeeUSD),
		TotalUSD:       toolgatetype.FormatUSD(r.TotalUSD),
		Input:          json.RawMessage(r.Input),
		InputSHA256:    r.InputSHA256,
		CreatedAt:      r.CreatedAt,
		ExpiresAt:      r.ExpiresAt,
		DecidedBy:      r.DecidedBy,
		Remember:       r.Remember,
	}
	if out.Remember == "" && (r.Status == storage.ApprovalApproved || r.Status == storage.ApprovalUsed) {
		// Approved before every approve recorded what it applied: such an
		// approve granted its one call, as "once" says.
		out.Remember = toolgatetype.ApprovalOnce
	}
	if (r.Status == storage.ApprovalPending || r.Status == storage.ApprovalApproved) && !now.Before(r.ExpiresAt) {
		out.Status = toolgatetype.ApprovalStatusExpired
	}
	if !r.DecidedAt.IsZero() {
		at := r.DecidedAt
		out.DecidedAt = &at
	}
	if r.ExecutionID != uuid.Nil {
		out.ExecutionID = r.ExecutionID.String()
	}
	return out
}

// latestApprovalRequest returns the caller's newest approval request of
// the given status for the call c makes (its tool and input, whatever the
// quote or the tool's version), or nil when it has none. It reads the
// store, never this process's memory, so a request made through one
// instance of a gateway is found through any other sharing its store: a
// caller that asked for approval once finds the grant when it makes the
// same call again, with nothing to remember in between.
func (g *Gateway) latestApprovalRequest(ctx context.Context, c *call, status toolgatetype.ApprovalStatus) (*toolgatetype.ApprovalRequest, error) {
	now := g.clock.Now().UTC()
	f, err := statusFilter(status, now)
	if err != nil {
		return nil, err
	}
	f.Principals, f.ToolID, f.InputSHA256, f.Limit = []string{c.principal}, c.tool.Tool.ID, receipting.InputSHA256(c.input), 1
	list, err := g.store.ListApprovalRequests(ctx, f)
	if err != nil {
		return nil, internalError(err)
	}
	if len(list) == 0 {
		return nil, nil
	}
	out := g.approvalView(list[0], now)
	return &out, nil
}

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
