package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
)

// toolCall is a tools/call that passed the checks needing no store: who
// calls, which tool, with which arguments, under which key.
type toolCall struct {
	principal string
	tool      *registry.Version
	args      json.RawMessage // canonical (RFC 8785)
	key       string          // the gateway Idempotency-Key
}

// callTool answers a tools/call through the gateway, in this order: the
// caller, the tool and the arguments against its schema (nothing is quoted
// for a call that cannot run); an earlier run of the same call (answered
// from the store); the quote, with the policy and spend controls it states;
// the approval; and the call itself, which checks everything again.
func (g *gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, res, err := g.newCall(req)
	if res != nil || err != nil {
		return res, err
	}
	mode, err := g.approvalModeOf(ctx, c.principal)
	if err != nil {
		return refused(err), nil
	}
	if res := g.answerPrior(ctx, c, mode); res != nil {
		return res, nil
	}
	if answer, state, ok := approvalAnswer(req.Params); ok && mode == callerMode {
		return g.runAnswered(ctx, c, answer, state), nil
	}
	q, res := g.quote(ctx, c)
	if res != nil {
		return res, nil
	}
	switch {
	case q.Policy.Approval.Requirement == toolgatetype.RequirementCoveredByUserPolicy:
		return g.run(ctx, c, approval{quoteID: q.Quote.ID, digest: *q.Quote.ManifestDigest}), nil
	case mode == approverMode:
		return g.approveByApprover(ctx, req, c, q)
	}
	return g.approveByCaller(ctx, req, c, q), nil
}

// newCall checks who calls, the tool and the arguments, and names the call's
// Idempotency-Key. A tool error comes back for bad arguments, an error for
// an unknown tool or caller.
func (g *gateway) newCall(req *mcp.CallToolRequest) (*toolCall, *mcp.CallToolResult, error) {
	principal, err := g.principalOf(req)
	if err != nil {
		return nil, nil, err
	}
	v, err := g.gw.Registry().Lookup(req.Params.Name)
	if err != nil || v.Tool.Slug != req.Params.Name {
		return nil, nil, unknownTool(req.Params.Name)
	}
	args := bytes.TrimSpace(req.Params.Arguments)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	if args[0] != '{' {
		return nil, schemaError(v.Tool.Slug, []toolgatetype.FieldError{{Path: "arguments", Message: "must be an object"}}), nil
	}
	canonical, err := registry.Canonicalize(args)
	if err != nil {
		return nil, schemaError(v.Tool.Slug, []toolgatetype.FieldError{{Path: "arguments", Message: "must be valid JSON"}}), nil
	}
	if failures := v.Input.Validate(canonical, "arguments"); failures != nil {
		return nil, schemaError(v.Tool.Slug, failures), nil
	}
	key, err := idempotencyKey(req.Params.Meta, v.Tool.ID, canonical)
	if err != nil {
		return nil, refused(err), nil
	}
	return &toolCall{principal: principal, tool: v, args: canonical, key: key}, nil, nil
}

// answerPrior answers a call that already ran under its key: with the stored
// result once finished, and while unfinished by calling again under the
// first run's quote, which is the same request (the gateway says it is in
// progress, or takes over a run whose process died). In approver mode the
// same request carries the grant the first run used, found by its quote.
// Nil: no earlier run.
func (g *gateway) answerPrior(ctx context.Context, c *toolCall, mode approvalMode) *mcp.CallToolResult {
	prior, err := g.gw.PriorCall(ctx, c.principal, c.key)
	switch {
	case err != nil:
		return refused(err)
	case prior == nil:
		return nil
	case prior.Result != nil:
		return resultOf(prior.Result.Execution)
	}
	a := approval{quoteID: prior.QuoteID, digest: c.tool.Digest}
	if mode == approverMode {
		used, err := g.gw.LatestApprovalRequest(ctx, c.principal, toolgate.ApprovalLookup{
			Tool: c.tool.Tool.ID, Input: c.args, Status: toolgatetype.ApprovalStatusUsed,
		})
		if err != nil {
			return refused(err)
		}
		if used != nil && used.QuoteID == prior.QuoteID {
			a.digest, a.grant = used.ManifestDigest, used.ID
		}
	}
	return g.run(ctx, c, a)
}

// quote quotes the call, or refuses it when the quote says it cannot run:
// the tool is blocked, or the spend controls deny it. The quote is left to
// expire unused; nothing is charged.
func (g *gateway) quote(ctx context.Context, c *toolCall) (*toolgatetype.QuoteResult, *mcp.CallToolResult) {
	q, err := g.gw.Quote(ctx, c.principal, c.tool.Tool.Slug)
	if err != nil {
		return nil, refused(err)
	}
	if !q.Policy.Callable || q.Quote.ManifestDigest == nil {
		return nil, refused(&toolgatetype.Error{Code: toolgatetype.CodeToolBlocked,
			Message: fmt.Sprintf("%s cannot be called: %s", c.tool.Tool.Slug, strings.Join(q.Policy.Reasons, "; "))})
	}
	if !q.Controls.Approved {
		return nil, refused(&toolgatetype.Error{Code: toolgatetype.CodeSpendLimitExceeded,
			Message: "the call would break your spend controls", Violations: q.Controls.Violations})
	}
	return q, nil
}

// approval is how a call is approved: the quote it runs under, the
// manifest digest approved, and in approver mode the grant, the id of the
// approval request an approver approved.
type approval struct {
	quoteID string
	digest  string
	grant   string
}

// run makes the call as approved by a and answers with its execution. A
// call refused because its key is busy or already used was raced by a
// retry of itself: the stored answer is given when there is one.
func (g *gateway) run(ctx context.Context, c *toolCall, a approval) *mcp.CallToolResult {
	res, err := g.gw.Call(ctx, c.principal, toolgatetype.CallRequest{
		Tool:           c.tool.Tool.Slug,
		QuoteID:        a.quoteID,
		Input:          c.args,
		ApprovalDigest: a.digest,
		ApprovalGrant:  a.grant,
		IdempotencyKey: c.key,
	})
	if isCode(err, toolgatetype.CodeIdempotencyKeyInUse) || isCode(err, toolgatetype.CodeIdempotencyKeyReused) {
		if prior, perr := g.gw.PriorCall(ctx, c.principal, c.key); perr == nil && prior != nil && prior.Result != nil {
			return resultOf(prior.Result.Execution)
		}
		return toolError(nil, fmt.Sprintf("%s: this call of %s is already running; call again shortly for its result. Nothing more was charged.",
			toolgatetype.CodeIdempotencyKeyInUse, c.tool.Tool.Slug))
	}
	if a.grant != "" && grantLapsed(err) {
		// Between finding the grant and using it, its quote expired or
		// another call used it. A grant serves one call: a new call asks
		// again.
		var te *toolgatetype.Error
		errors.As(err, &te)
		return toolError(nil, fmt.Sprintf("%s: the approval of this call of %s (approval request %s) can no longer be used: %s. "+
			"Call %s again with the same arguments to ask an approver again. Nothing was run or charged.",
			te.Code, c.tool.Tool.Slug, a.grant, strings.TrimSuffix(te.Message, "."), c.tool.Tool.Slug))
	}
	if err != nil {
		if isCode(err, toolgatetype.CodeInternal) {
			g.log.ErrorContext(ctx, "mcp call failed", "tool", c.tool.Tool.Slug, "error", err)
		}
		return refused(err)
	}
	return resultOf(res.Execution)
}

// grantLapsed reports whether a call was refused because its grant, good
// when found, no longer is: its quote expired or was used, or the tool
// changed since.
func grantLapsed(err error) bool {
	for _, code := range []toolgatetype.Code{toolgatetype.CodeApprovalExpired, toolgatetype.CodeQuoteExpired, toolgatetype.CodeQuoteUsed, toolgatetype.CodeQuoteOutdated} {
		if isCode(err, code) {
			return true
		}
	}
	return false
}

func isCode(err error, code toolgatetype.Code) bool {
	return err != nil && errors.Is(err, &toolgatetype.Error{Code: code})
}
