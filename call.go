package toolgate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/fingerprint"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/internal/spendlimits"
	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Call runs one call of a tool under a quote and returns its execution,
// charging only a completed one. It checks the request, an earlier call
// under its Idempotency-Key, the quote, the policy and the approval, the
// input and the spend limits, in that order, and admits the call in one
// atomic step of the store. Every refusal is a *[toolgatetype.Error] and
// leaves nothing stored; a retry with the same key and request returns the
// stored result (Replayed) without calling the provider again.
//
// ctx bounds the call until it is admitted; from then on it runs to its
// end, within the upstream deadline (and ctx's for an upstream MCP
// server's tool), and its result is recorded for a retry to get.
func (g *Gateway) Call(ctx context.Context, principal string, req toolgatetype.CallRequest) (*toolgatetype.CallResult, error) {
	c, err := g.newCall(principal, req)
	if err != nil {
		return g.refusedBeforeRun(ctx, principal, req.Tool, nil, err)
	}
	hide, ms := g.hidden(ctx, principal, c.tool, true)
	if hide {
		return g.refusedBeforeRun(ctx, principal, req.Tool, nil, errToolNotFound(req.Tool))
	}
	c.hideMatches = ms
	return g.callPrepared(ctx, &c)
}

// callPrepared is Call for a call already prepared and checked: the
// executor runs it (callsteps.go), its hooks reporting it.
func (g *Gateway) callPrepared(ctx context.Context, c *call) (*toolgatetype.CallResult, error) {
	res, err := g.executor.Execute(ctx, g.unit(c))
	// Every way to a result (run, replayed, taken over) names its key.
	if res != nil {
		res.IdempotencyKey = c.req.IdempotencyKey
	}
	return res, err
}

// refusedBeforeRun reports a call refused before the executor had it, on
// tool as the caller named it (v: the version it resolved to, nil when
// none), as the executor's hooks report one it refused.
func (g *Gateway) refusedBeforeRun(ctx context.Context, principal, tool string, v *registry.Version, err error) (*toolgatetype.CallResult, error) {
	var rec telemetry.CallRecord
	ctx = g.obs.StartCall(ctx, &rec, principal, tool)
	rec.SetTool(v)
	g.obs.EndCall(ctx, &rec, nil, err)
	return nil, err
}

// call is one call of a tool from its door to its result, the one value
// the executor runs: a request that passed the checks that need no store
// (who calls, with which key, which tool, quote and input), what it was
// decided on and admitted with, and what its run found.
type call struct {
	PreparedCall
	req     toolgatetype.CallRequest
	quoteID uuid.UUID
	grant   uuid.UUID // uuid.Nil when the call carries none
	// fingerprint tells a retry of this request from another request
	// under the same key.
	fingerprint string
	// approval is the caller's approval as CallTool was given it (nil:
	// none), before it knows which quote the call runs under; keyRead
	// says CallTool read the key's record, and it held none, before
	// anything ran, else a refusal on the key is answered from its record.
	approval *toolgatetype.CallerApproval
	keyRead  bool
	g        *Gateway
	// unit is the call as the executor runs it, and hooks its hooks: the
	// gateway's telemetry (rec collects what the call reports once it is
	// over) and its own (callsteps.go).
	unit  executor.Call
	hooks [2]executor.Hooks
	rec   telemetry.CallRecord
	// budgets are the budgets the call counts in, nearest first (nil:
	// none), as its caller's principal and token claims put it in them.
	budgets []*budgets.Node
	// mode is who approves the caller's calls, as admitReads found it
	// unless the door that made the call had (CallTool).
	mode toolgatetype.ApprovalMode
	// quoted is the quote the call's door made for it in the same request
	// (CallTool), whose decision the call is admitted on; nil for a call
	// under a quote made before, which is decided on reading it.
	quoted *quoted
	// adm is what the call was admitted with, limits its limits as the
	// store counts them; exec, upstreamStatus and sealed are what its run
	// found and signed.
	adm            admission
	limits         []spendlimits.Built
	exec           toolgatetype.Execution
	upstreamStatus int
	sealed         toolgatetype.SignedReceipt
	// upstreamToken is what the provider is sent on the caller's behalf
	// ("": what the tool always sends), or identityErr why there is none.
	// It lives only here and in the run's context.
	upstreamToken string
	identityErr   error
}

// newCall checks the caller, the key and the request itself, in the order
// Call documents, preparing the call on the way.
func (g *Gateway) newCall(principal string, req toolgatetype.CallRequest) (call, error) {
	if err := validPrincipal(principal); err != nil {
		return call{}, err
	}
	if err := toolgatetype.ValidateIdempotencyKey(req.IdempotencyKey); err != nil {
		return call{}, err
	}
	v, err := g.lookup(req.Tool)
	if err != nil {
		return call{}, err
	}
	quoteID, grant, err := parseApproval(req.QuoteID, req.ApprovalGrant)
	if err != nil {
		return call{}, err
	}
	input, err := canonicalInput(req.Input)
	if err != nil {
		return call{}, err
	}
	// The input is validated later, after the quote and the approval, whose
	// refusals a caller is told first.
	c := call{PreparedCall: PreparedCall{principal: principal, tool: v, input: input}, req: req}
	c.under(quoteID, grant)
	return c, nil
}

// parseApproval parses the ids of the quote a call runs under and of the
// approver's grant it carries ("": none).
func parseApproval(quote, grantID string) (quoteID, grant uuid.UUID, err error) {
	quoteID, err = uuid.Parse(quote)
	if err != nil {
		return uuid.Nil, uuid.Nil, newError(toolgatetype.CodeInvalidRequest, "quoteId must be the id of a quote (a UUID)")
	}
	if grantID != "" {
		if grant, err = uuid.Parse(grantID); err != nil {
			return uuid.Nil, uuid.Nil, newError(toolgatetype.CodeInvalidRequest, "approval.grantId must be the id of an approval request (a UUID)")
		}
	}
	return quoteID, grant, nil
}

// under puts the call under quoteID and grant, the ids of its request's
// quote and grant (uuid.Nil: none).
func (c *call) under(quoteID, grant uuid.UUID) {
	c.quoteID, c.grant = quoteID, grant
	c.fingerprint = fingerprint.WithGrant(c.tool.Tool.ID, quoteID.String(), c.input, c.req.ApprovalDigest, c.req.ApprovalGrant)
}

// canonicalInput checks that a call's input is there and is JSON, and
// returns it in RFC 8785 canonical form.
func canonicalInput(raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, newError(toolgatetype.CodeInvalidRequest, "input is required")
	}
	input, err := registry.Canonicalize(raw)
	if err != nil {
		return nil, newError(toolgatetype.CodeInvalidRequest, "input is not valid JSON: %v", strings.TrimPrefix(err.Error(), registry.ErrNotCanonicalizable.Error()+": "))
	}
	return input, nil
}

// admission is what a call was admitted with.
type admission struct {
	quote  storage.Quote
	policy toolgatetype.Policy // zero when resumed
	// mode is who approves the caller's calls; grant is the approval
	// request that approved this one, nil when none (or resumed). Together
	// with policy they say how the call was approved: by the digest sent, by
	// a standing approval, or by this grant, whose id the store records as
	// used by the execution.
	mode   toolgatetype.ApprovalMode
	grant  *storage.ApprovalRequest
	limits spendlimits.Limits
	// resumed: the call takes over an abandoned run of itself, which
	// passed admission when it began.
	resumed bool
	// abandon is why a resumed run must not reach the provider after all:
	// its tool changed or was blocked since it began. It is finished as
	// failed rather than refused, so its reservation is released and its
	// key answers from then on.
	abandon *registry.UpstreamError
}

// admitReads are what a call is decided on: its quote, the caller's
// spend controls, the grant the call carries if any and, unless the
// approval sent settles the policy (see checkPolicy), the standing
// approval, which the store reads in the step that admits the call
// (storage.Store.AdmitCall), for decide. A call under the quote its door
// just made reads nothing: its quote decided it (quoted).
func (g *Gateway) admitReads(ctx context.Context, c *call) (storage.Reads, error) {
	if c.quoted != nil {
		c.budgets, c.mode = c.quoted.budgets, c.quoted.adm.mode
		return storage.Reads{Principal: c.principal, ToolID: c.tool.Tool.ID}, nil
	}
	c.budgets = g.callBudgets(ctx, c.principal)
	if c.mode == "" {
		mode, err := g.approvalMode(ctx, c.principal)
		if err != nil {
			return storage.Reads{}, err
		}
		c.mode = mode
	}
	return g.callReads(c, g.approvalsFromStore && !settles(c, c.mode)), nil
}

// decide applies, on read, the store's answer to admitReads, the checks a
// call passes before the store is asked to admit it: the quote, the
// policy and its approval, the input and the per-call spend limits.
func (g *Gateway) decide(ctx context.Context, c *call, read storage.ReadResult, mode toolgatetype.ApprovalMode, now time.Time) (admission, error) {
	found := read.Quote
	if c.quoted != nil {
		found = &c.quoted.adm.quote
	}
	q, err := g.checkQuote(&c.PreparedCall, c.quoteID, c.req.IdempotencyKey, found, now)
	if err != nil {
		return admission{}, err
	}
	c.rec.SetQuote(q)
	g.ruleCall(ctx, &c.PreparedCall, c.budgets, mode)
	c.rec.SetRules(ruling.Uses(c.ruled.All()))
	if err := c.ruled.Refusal(); err != nil {
		return admission{}, err
	}
	if c.ruled.Asks() {
		mode = toolgatetype.ApprovalModeApprover
	}
	policy, err := g.checkPolicy(ctx, c, q, read, mode, now)
	if err != nil {
		return admission{}, err
	}
	if err := c.inputError(); err != nil {
		return admission{}, err
	}
	limits, err := g.callLimits(ctx, c, read)
	if err != nil {
		return admission{}, err
	}
	violations := limits.StaticViolations(q.TotalUSD)
	if c.budgets != nil {
		violations = append(violations, spendlimits.BlockedByBudgets(c.budgets, c.tool.Tool.Slug)...)
	}
	if len(violations) > 0 {
		return admission{}, spendlimits.SpendLimitError(violations)
	}
	a := admission{quote: q, policy: policy, mode: mode, limits: limits}
	if c.grant != uuid.Nil {
		a.grant = read.Grant
	}
	return a, nil
}

// callLimits are the call's limits: its quote's, when its door made it
// (quoted), else the caller's as read.
func (g *Gateway) callLimits(ctx context.Context, c *call, read storage.ReadResult) (spendlimits.Limits, error) {
	if c.quoted != nil {
		return c.quoted.adm.limits, nil
	}
	return g.limitsFor(ctx, c.principal, c.tool.Tool.Slug, read.SpendControls)
}

// callReads are a call's reads: its quote, the caller's spend controls and
// the grant the call carries, and the standing approval when asked, in one
// step of the store.
func (g *Gateway) callReads(c *call, approval bool) storage.Reads {
	return storage.Reads{
		Principal:     c.principal,
		QuoteID:       c.quoteID,
		GrantID:       c.grant,
		SpendControls: true,
		Approval:      approval,
		ToolID:        c.tool.Tool.ID,
	}
}

// approvalKind is how the call was approved, for the audit trail: by an
// approver's grant (which admission consumes), by the manifest digest it
// named, which admission checked is the current one, or else by the
// caller's policy, which admission found covers it without one.
func (c *call) approvalKind() toolgatetype.ApprovalKind {
	switch {
	case c.grant != uuid.Nil:
		return toolgatetype.ApprovalKindGrant
	case c.req.ApprovalDigest != "":
		return toolgatetype.ApprovalKindDigest
	}
	return toolgatetype.ApprovalKindStanding
}

// refusedByStore explains why the store refused to admit a call.
func refusedByStore(err error, built []spendlimits.Built, amount decimal.Decimal, now time.Time) error {
	var limitErr *storage.LimitError
	switch {
	case errors.Is(err, storage.ErrIdempotencyConflict):
		return executor.KeyInUse()
	case errors.Is(err, storage.ErrQuoteUsed):
		return newError(toolgatetype.CodeQuoteUsed, "the quote was already used by another call; request a new quote")
	case errors.Is(err, storage.ErrQuoteNotFound):
		return newError(toolgatetype.CodeQuoteNotFound, "the quote does not exist for this caller")
	case errors.Is(err, storage.ErrGrantUnusable):
		// Checked approved and unused when read; only another call using it
		// since (with its quote, which would be refused first) or its
		// deletion long after expiry changes that.
		return errGrantUsed()
	case errors.As(err, &limitErr):
		return spendlimits.Explain(built, limitErr, amount, now)
	}
	return internalError(err)
}

// admitResumed admits a retry that may take over an abandoned run of the
// same request. That run passed every check when it began, so only what can
// have changed since counts: the quote must still exist, and a tool that
// changed or was blocked meanwhile is not called after all.
func (g *Gateway) admitResumed(ctx context.Context, c *call, now time.Time) (admission, error) {
	c.budgets = g.callBudgets(ctx, c.principal)
	read, err := g.store.ReadBatch(ctx, g.callReads(c, false))
	if err != nil {
		return admission{}, internalError(err)
	}
	a := admission{resumed: true}
	a.quote, err = g.checkQuote(&c.PreparedCall, c.quoteID, c.req.IdempotencyKey, read.Quote, now)
	if read.Quote != nil {
		c.rec.SetQuote(a.quote)
	}
	switch {
	case toolgatetype.IsCode(err, toolgatetype.CodeQuoteNotFound):
		return a, err
	case toolgatetype.IsCode(err, toolgatetype.CodeQuoteOutdated) || !EvaluatePolicy(c.tool).Callable:
		a.abandon = registry.Upstreamf(toolgatetype.CodeToolChangedDuringCall, "%s changed or was blocked before this call could run; request a new quote", c.tool.Tool.Slug)
	}
	if a.limits, err = g.limitsFor(ctx, c.principal, c.tool.Tool.Slug, read.SpendControls); err != nil {
		return a, err
	}
	return a, nil
}
