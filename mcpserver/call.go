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
	if res := g.answerPrior(ctx, c); res != nil {
		return res, nil
	}
	mode := g.approvalModeOf(ctx, c.principal)
	if answer, state, ok := approvalAnswer(req.Params); ok && mode == callerMode {
		return g.runAnswered(ctx, c, answer, state), nil
	}
	q, res := g.quote(ctx, c)
	if res != nil {
		return res, nil
	}
	switch {
	case q.Policy.Approval.Requirement == toolgate.RequirementCoveredByUserPolicy:
		return g.run(ctx, c, q.Quote.ID, *q.Quote.ManifestDigest), nil
	case mode == approverMode:
		return g.approveByApprover(ctx, c, q), nil
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
		return nil, schemaError(v.Tool.Slug, []registry.FieldError{{Path: "arguments", Message: "must be an object"}}), nil
	}
	canonical, err := registry.Canonicalize(args)
	if err != nil {
		return nil, schemaError(v.Tool.Slug, []registry.FieldError{{Path: "arguments", Message: "must be valid JSON"}}), nil
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
// progress, or takes over a run whose process died). Nil: no earlier run.
func (g *gateway) answerPrior(ctx context.Context, c *toolCall) *mcp.CallToolResult {
	prior, err := g.gw.PriorCall(ctx, c.principal, c.key)
	switch {
	case err != nil:
		return refused(err)
	case prior == nil:
		return nil
	case prior.Result != nil:
		return resultOf(prior.Result.Execution)
	}
	return g.run(ctx, c, prior.QuoteID, c.tool.Digest)
}

// quote quotes the call, or refuses it when the quote says it cannot run:
// the tool is blocked, or the spend controls deny it. The quote is left to
// expire unused; nothing is charged.
func (g *gateway) quote(ctx context.Context, c *toolCall) (*toolgate.QuoteResult, *mcp.CallToolResult) {
	q, err := g.gw.Quote(ctx, c.principal, c.tool.Tool.Slug)
	if err != nil {
		return nil, refused(err)
	}
	if !q.Policy.Callable || q.Quote.ManifestDigest == nil {
		return nil, refused(&toolgate.Error{Code: toolgate.CodeToolBlocked,
			Message: fmt.Sprintf("%s cannot be called: %s", c.tool.Tool.Slug, strings.Join(q.Policy.Reasons, "; "))})
	}
	if !q.Controls.Approved {
		return nil, refused(&toolgate.Error{Code: toolgate.CodeSpendLimitExceeded,
			Message: "the call would break your spend controls", Violations: q.Controls.Violations})
	}
	return q, nil
}

// run makes the call under the quote with the approved digest and answers
// with its execution. A call refused because its key is busy or already
// used was raced by a retry of itself: the stored answer is given when
// there is one.
func (g *gateway) run(ctx context.Context, c *toolCall, quoteID, digest string) *mcp.CallToolResult {
	res, err := g.gw.Call(ctx, c.principal, toolgate.CallRequest{
		Tool:           c.tool.Tool.Slug,
		QuoteID:        quoteID,
		Input:          c.args,
		ApprovalDigest: digest,
		IdempotencyKey: c.key,
	})
	if isCode(err, toolgate.CodeIdempotencyKeyInUse) || isCode(err, toolgate.CodeIdempotencyKeyReused) {
		if prior, perr := g.gw.PriorCall(ctx, c.principal, c.key); perr == nil && prior != nil && prior.Result != nil {
			return resultOf(prior.Result.Execution)
		}
		return toolError(nil, fmt.Sprintf("%s: this call of %s is already running; call again shortly for its result. Nothing more was charged.",
			toolgate.CodeIdempotencyKeyInUse, c.tool.Tool.Slug))
	}
	if err != nil {
		if isCode(err, toolgate.CodeInternal) {
			g.log.ErrorContext(ctx, "mcp call failed", "tool", c.tool.Tool.Slug, "error", err)
		}
		return refused(err)
	}
	return resultOf(res.Execution)
}

func isCode(err error, code toolgate.Code) bool {
	return err != nil && errors.Is(err, &toolgate.Error{Code: code})
}
