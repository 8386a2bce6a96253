package toolgate

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/internal/spendlimits"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// CallTool makes one call of a tool for a layer that quotes on the
// caller's behalf, such as the MCP server, whose clients name a tool and
// its input but hold no quote: it quotes, answers from an earlier call
// under the key, finds or asks for the approval, and calls (Call), so the
// layer only translates. It returns no error of its own: every refusal is
// the outcome's Refusal, a *[toolgatetype.Error] as Call returns one.
func (g *Gateway) CallTool(ctx context.Context, principal string, req toolgatetype.ToolCallRequest) *toolgatetype.ToolCallOutcome {
	if err := validPrincipal(principal); err != nil {
		return refusal(err)
	}
	// The key is checked before the request, as Call checks it.
	if err := toolgatetype.ValidateIdempotencyKey(req.IdempotencyKey); err != nil {
		return refusal(err)
	}
	p, err := g.Prepare(principal, req.Tool, req.Input)
	if err != nil {
		return refusal(err)
	}
	return g.CallPreparedTool(ctx, p, req.IdempotencyKey, req.Approval)
}

// CallPreparedTool is CallTool for a call already prepared, under the
// Idempotency-Key key and with the caller's approval, if any.
func (g *Gateway) CallPreparedTool(ctx context.Context, p *PreparedCall, key string, approval *toolgatetype.CallerApproval) *toolgatetype.ToolCallOutcome {
	if p == nil || p.tool == nil {
		return refusal(newError(toolgatetype.CodeInvalidRequest, "the call was not prepared: make it with Gateway.Prepare"))
	}
	if err := toolgatetype.ValidateIdempotencyKey(key); err != nil {
		return refusal(err)
	}
	// The pipeline, in this order:
	//   - the request: the caller, the key, the tool and the input against
	//     the tool's schema (Prepare), so that nothing is quoted for a call
	//     that cannot run;
	//   - an earlier call under the key, read with the quote (or, for a
	//     call that runs under an earlier quote, from the refusal of its key):
	//     finished, its stored result; unfinished, the same request made
	//     again under that call's quote (a quote is part of what a key's
	//     request is), which is told the key is in use, or takes over a run
	//     whose process died, with the grant it began with in approver mode;
	//   - in caller mode, the caller's answer to an approval it was asked
	//     for: the call runs under the quote it was asked under, or not at
	//     all; in approver mode, an approver's grant for the tool's current
	//     version, from the call's newest approval request: the call runs
	//     under the quote the request was made for;
	//   - the quote, refused when it says the call cannot run: the tool is
	//     blocked, or the spend controls deny it (the quote is left to
	//     expire unused);
	//   - the approval: none when the policy covers the call; in approver
	//     mode the request pending or denied, else a new request; in caller
	//     mode the digest the caller approved, else a question for it;
	//   - the call itself: under the quote just made, admitted on what the
	//     quote decided (quoted); under an earlier quote, as Call makes it,
	//     deciding it on reading that quote.
	// Each call is thus decided once: the approval mode, the policy, the
	// limits and the budgets.
	// A call refused because its key is busy or used was raced by a retry
	// of itself: the stored result is given when there is one.
	c := &call{PreparedCall: *p, req: toolgatetype.CallRequest{Tool: p.tool.Tool.Slug, Input: p.input, IdempotencyKey: key}, approval: approval}
	mode, err := g.approvalMode(ctx, c.principal)
	if err != nil {
		return refusal(err)
	}
	// The organization's rules are decided here, once, on the real input:
	// a hidden tool is not there, a deny refuses, and an ask sends the call
	// to a person as in approver mode, whatever the caller's.
	if mode, err = g.ruleToolCall(ctx, c, mode); err != nil {
		return refusal(err)
	}
	c.mode = mode
	if mode == toolgatetype.ApprovalModeCaller && isAnswer(c.approval) {
		return g.runAnswered(ctx, c, c.approval)
	}
	var found *toolgatetype.ApprovalRequest
	if mode == toolgatetype.ApprovalModeApprover {
		// An approver's grant for the tool as it is runs the call under
		// the quote its request was made for, decided there (Call), as
		// the caller's answer does in caller mode: a quote made now would
		// be decided on and left unused.
		if found, err = g.latestApprovalRequest(ctx, c, toolgatetype.ApprovalStatusAll); err != nil {
			return refusal(err)
		}
		if found != nil && found.Status == toolgatetype.ApprovalStatusApproved && found.ManifestDigest == c.tool.Digest {
			return g.runToolCall(ctx, c, toolApproval{quoteID: found.QuoteID, digest: found.ManifestDigest, grant: found.ID})
		}
	}
	// The key's record is read with the quote, which is not made when
	// the key holds one: a new key costs no read of its own.
	qd, err := g.quoteToolCall(ctx, c)
	switch {
	case qd != nil && qd.prior != nil:
		return g.answerRecord(ctx, c, qd.prior)
	case toolgatetype.IsCode(err, toolgatetype.CodeIdempotencyKeyInUse):
		return g.keyRaced(ctx, c, err)
	case err != nil:
		return refusal(err)
	}
	c.keyRead = true
	q := qd.res
	// A call under the quote just made is admitted on what the quote
	// decided (quoted), not decided again.
	switch {
	case q.Policy.Approval.Requirement == toolgatetype.RequirementCoveredByUserPolicy:
		return g.runToolCall(ctx, c, toolApproval{quoteID: q.Quote.ID, digest: *q.Quote.ManifestDigest, quoted: qd})
	case mode == toolgatetype.ApprovalModeApprover:
		return g.approveByApprover(ctx, c, qd, found)
	case c.approval != nil:
		// Call checks it is this very digest (approval_mismatch).
		return g.runToolCall(ctx, c, toolApproval{quoteID: q.Quote.ID, digest: c.approval.ManifestDigest, quoted: qd})
	}
	return &toolgatetype.ToolCallOutcome{Approval: &toolgatetype.ToolCallApproval{
		Mode:           toolgatetype.ApprovalModeCaller,
		QuoteID:        q.Quote.ID,
		Tool:           q.Tool,
		ManifestDigest: *q.Quote.ManifestDigest,
		TotalUSD:       q.Quote.TotalUSD,
		Requirement:    q.Policy.Approval.Requirement,
		ExpiresAt:      q.Quote.ExpiresAt,
	}}
}

// answerPrior answers a call that already ran under its key (see
// answerRecord); nil when the key holds none.
func (g *Gateway) answerPrior(ctx context.Context, c *call) *toolgatetype.ToolCallOutcome {
	rec, err := g.store.GetIdempotency(ctx, c.principal, c.req.IdempotencyKey)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil
	case err != nil:
		return refusal(internalError(err))
	}
	return g.answerRecord(ctx, c, &rec)
}

// answerRecord answers a call that already ran under its key, rec: with
// the stored result once finished, and while unfinished by calling again
// under the first run's quote, which is the same request (Call says it is
// in progress, or takes over a run whose process died). In approver mode
// the same request carries the grant the first run used, found by its
// quote.
func (g *Gateway) answerRecord(ctx context.Context, c *call, rec *storage.IdempotencyRecord) *toolgatetype.ToolCallOutcome {
	c.keyRead = true
	prior, err := g.priorOf(ctx, c, rec)
	switch {
	case err != nil:
		return refusal(err)
	case prior.result != nil:
		return &toolgatetype.ToolCallOutcome{Result: prior.result}
	}
	a := toolApproval{quoteID: prior.quoteID, digest: c.tool.Digest}
	if c.mode == toolgatetype.ApprovalModeApprover {
		used, err := g.latestApprovalRequest(ctx, c, toolgatetype.ApprovalStatusUsed)
		if err != nil {
			return refusal(err)
		}
		if used != nil && used.QuoteID == prior.quoteID {
			a.digest, a.grant = used.ManifestDigest, used.ID
		}
	}
	return g.runToolCall(ctx, c, a)
}

// priorCall is the call a caller already made under a key: its stored
// result once finished, else the quote it was made under.
type priorCall struct {
	result  *toolgatetype.CallResult
	quoteID string
}

// priorOf is the call rec, the record of c's key, stands for.
func (g *Gateway) priorOf(ctx context.Context, c *call, rec *storage.IdempotencyRecord) (*priorCall, error) {
	if rec.Finished {
		res, err := executor.Replay(rec.Response)
		if err != nil {
			return nil, err
		}
		res.IdempotencyKey = c.req.IdempotencyKey
		return &priorCall{result: res}, nil
	}
	exec, err := g.store.GetExecution(ctx, rec.ExecutionID)
	if err != nil {
		return nil, internalError(err)
	}
	return &priorCall{quoteID: exec.QuoteID.String()}, nil
}

// isAnswer reports whether a is the caller's answer to an approval it was
// asked for, which names the quote it was asked under or declines, rather
// than a digest given unasked.
func isAnswer(a *toolgatetype.CallerApproval) bool {
	return a != nil && (a.QuoteID != "" || a.Declined)
}

// runAnswered runs a call under the approval the caller was asked for, as
// its answer gives it, recording the standing approval it asks for first;
// an answer that approves nothing runs nothing. A standing approval that
// cannot be recorded is logged, and the call runs all the same: the user
// approved it.
func (g *Gateway) runAnswered(ctx context.Context, c *call, a *toolgatetype.CallerApproval) *toolgatetype.ToolCallOutcome {
	if a.Declined || a.Remember != "" {
		// Neither is for a retry of a call already made: it is answered
		// from its key first. An answer that only runs the call learns of
		// an earlier one from the refusal of its key (runToolCall).
		if out := g.answerPrior(ctx, c); out != nil {
			return out
		}
		c.keyRead = true
	}
	if a.Declined {
		return &toolgatetype.ToolCallOutcome{Approval: &toolgatetype.ToolCallApproval{Mode: toolgatetype.ApprovalModeCaller, Declined: true}}
	}
	if a.Remember != "" {
		if _, err := g.setApprovalOf(ctx, c.principal, c.tool, a.Remember, a.ManifestDigest, ""); err != nil {
			// The person approved this call whatever becomes of the
			// standing approval; they will be asked again next time.
			g.log.WarnContext(ctx, "could not remember an approval", "tool", c.tool.Tool.Slug, "error", err)
		}
	}
	return g.runToolCall(ctx, c, toolApproval{quoteID: a.QuoteID, digest: a.ManifestDigest})
}

// quoteToolCall quotes the call, or refuses it when the quote says it
// cannot run: the tool is blocked, or the spend controls deny it. The
// quote is left to expire unused; nothing is charged. When the key holds
// a record, that is returned instead (quoted.prior).
func (g *Gateway) quoteToolCall(ctx context.Context, c *call) (*quoted, error) {
	qd, err := g.quoteVersion(ctx, c.principal, c.tool, c.req.IdempotencyKey, c.mode, c.ruled)
	if err != nil || qd.prior != nil {
		return qd, err
	}
	q := qd.res
	if !q.Policy.Callable || q.Quote.ManifestDigest == nil {
		return nil, blockedError(c.tool, q.Policy)
	}
	if !q.Controls.Approved {
		return nil, spendlimits.Refusal(q.Controls.Violations, qd.short)
	}
	return qd, nil
}

// quoted is a quote made for a call (res), and what it decided: the
// caller's approval mode, the policy with the standing approval, the
// limits and the budgets, with the quote as stored (adm). A call made
// under it in the same request is admitted on that decision, which is
// minutes fresher than any HTTP call's quote, rather than reading it all
// back and deciding again: what must hold at the very moment of admission
// (the quote unused, the key free, the windows under their limits) the
// store still checks in the step that admits it. prior is instead the
// record the call's key already holds, when it does; then nothing was
// quoted. short is the first budget the call would take over a limit,
// nearest the principal (nil: none), for a refusal.
type quoted struct {
	res     *toolgatetype.QuoteResult
	adm     admission
	budgets []*budgets.Node
	prior   *storage.IdempotencyRecord
	short   *toolgatetype.BudgetRefusal
	// ruled is what the rules decided of the call quoted (nil: nothing).
	ruled *ruling.Decided
}

// approveByApprover is the approval of a call that needs one in approver
// mode, which only an approver's grant gives, when found, the call's
// newest approval request (nil: none), is not a grant for the tool's
// current version (which CallPreparedTool ran). It is looked up in the
// store, by principal, tool and canonical input, so that a retry finds
// what its first try asked for on any instance of the gateway:
//   - pending: the caller is to wait for it;
//   - denied: the caller is told so until the request would have expired;
//     the same call made after that asks again;
//   - none, used by an earlier call, expired, or for another version: a
//     new request under quote q. An approval that expired unused is named
//     beside it.
func (g *Gateway) approveByApprover(ctx context.Context, c *call, qd *quoted, found *toolgatetype.ApprovalRequest) *toolgatetype.ToolCallOutcome {
	q := qd.res
	needed := &toolgatetype.ToolCallApproval{Mode: toolgatetype.ApprovalModeApprover}
	if found != nil && found.ManifestDigest == *q.Quote.ManifestDigest {
		switch found.Status {
		case toolgatetype.ApprovalStatusPending:
			needed.Request = found
			return &toolgatetype.ToolCallOutcome{Approval: needed}
		case toolgatetype.ApprovalStatusDenied:
			if g.clock.Now().Before(found.ExpiresAt) {
				needed.Request = found
				return &toolgatetype.ToolCallOutcome{Approval: needed}
			}
		case toolgatetype.ApprovalStatusExpired:
			if found.DecidedBy != "" {
				needed.Expired = found
			}
		}
	}
	quoteID, err := uuid.Parse(q.Quote.ID)
	if err != nil {
		return refusal(err)
	}
	// The budgets the call counts in, as the quote just made decided them.
	r, err := g.requestApproval(ctx, &c.PreparedCall, quoteID, qd.budgets, true)
	if err != nil {
		return refusal(err)
	}
	needed.Request = r
	return &toolgatetype.ToolCallOutcome{Approval: needed}
}

// toolApproval is how a tool call is approved: the quote it runs under,
// the manifest digest approved, and in approver mode the grant, the id of
// the approval request an approver approved.
type toolApproval struct {
	quoteID string
	digest  string
	grant   string
	// quoted is the quote quoteID names when the call made it: the call
	// is admitted on what it decided.
	quoted *quoted
}

// runToolCall makes the call as approved by a. A call refused because its
// key is busy or already used was raced by a retry of itself: the stored
// result is given when there is one.
func (g *Gateway) runToolCall(ctx context.Context, c *call, a toolApproval) *toolgatetype.ToolCallOutcome {
	if !c.keyRead {
		if _, _, err := parseApproval(a.quoteID, a.grant); err != nil {
			// Refused before its key would answer: an earlier call under
			// it answers first, as if the key had been read.
			if out := g.answerPrior(ctx, c); out != nil {
				return out
			}
			c.keyRead = true
		}
	}
	res, err := g.callApproved(ctx, c, a)
	switch {
	case err == nil:
		return &toolgatetype.ToolCallOutcome{Result: res}
	case toolgatetype.IsCode(err, toolgatetype.CodeIdempotencyKeyInUse) || toolgatetype.IsCode(err, toolgatetype.CodeIdempotencyKeyReused):
		if !c.keyRead {
			// An earlier call under the key, not read before: answered
			// as reading it first would have, from the record the
			// refusal read when it did.
			if rec := heldRecord(err); rec != nil {
				return g.answerRecord(ctx, c, rec)
			}
			if out := g.answerPrior(ctx, c); out != nil {
				return out
			}
			return refusal(err)
		}
		return g.keyRaced(ctx, c, err)
	case a.grant != "" && grantLapsed(err):
		// Between finding the grant and using it, its quote expired or
		// another call used it.
		out := refusal(err)
		out.LapsedGrant = a.grant
		return out
	}
	return refusal(err)
}

// keyRaced answers a call refused because its key is busy or already
// used, since its record was read: it was raced by a retry of itself,
// whose stored result is given when there is one.
func (g *Gateway) keyRaced(ctx context.Context, c *call, err error) *toolgatetype.ToolCallOutcome {
	rec := heldRecord(err)
	if rec == nil {
		got, gerr := g.store.GetIdempotency(ctx, c.principal, c.req.IdempotencyKey)
		if gerr != nil {
			return refusal(err)
		}
		rec = &got
	}
	if !rec.Finished {
		return refusal(err)
	}
	if prior, perr := g.priorOf(ctx, c, rec); perr == nil {
		return &toolgatetype.ToolCallOutcome{Result: prior.result}
	}
	return refusal(err)
}

// heldRecord is the key's record a refusal on the key read (see
// executor.Held), nil when it read none.
func heldRecord(err error) *storage.IdempotencyRecord {
	var h *executor.Held
	if errors.As(err, &h) {
		return &h.Record
	}
	return nil
}

// callApproved makes the call as approved by a, as Call makes it.
func (g *Gateway) callApproved(ctx context.Context, c *call, a toolApproval) (*toolgatetype.CallResult, error) {
	c.req.QuoteID, c.req.ApprovalDigest, c.req.ApprovalGrant = a.quoteID, a.digest, a.grant
	quoteID, grant, err := parseApproval(a.quoteID, a.grant)
	if err != nil {
		// Reported as Call reports a refusal of the request itself.
		return g.refusedBeforeRun(ctx, c.principal, c.req.Tool, c.tool, err)
	}
	c.under(quoteID, grant)
	c.quoted = a.quoted
	return g.callPrepared(ctx, c)
}

// grantLapsed reports whether a call was refused because its grant, good
// when found, no longer is: its quote expired or was used, or the tool
// changed since.
func grantLapsed(err error) bool {
	for _, code := range []toolgatetype.Code{toolgatetype.CodeApprovalExpired, toolgatetype.CodeQuoteExpired, toolgatetype.CodeQuoteUsed, toolgatetype.CodeQuoteOutdated} {
		if toolgatetype.IsCode(err, code) {
			return true
		}
	}
	return false
}

// refusal is the outcome of a refused call: err as the
// *toolgatetype.Error it is, or an internal error standing for it.
func refusal(err error) *toolgatetype.ToolCallOutcome {
	var te *toolgatetype.Error
	if !errors.As(err, &te) {
		te = internalError(err)
	}
	return &toolgatetype.ToolCallOutcome{Refusal: te}
}
