package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/strictjson"
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

// callTool answers a tools/call by asking the gateway (Gateway.CallTool),
// which quotes, approves and calls as its own pipeline: this only checks
// the call's arguments and names its key first, and then translates the
// outcome into a result, a question for the client, or a tool error.
//
// A call made again with the requestState of a question it was asked
// (protocol 2026-07-28) is that first call: the state is opened and
// checked against this call before anything else, and its key is the
// first call's, so however often the state comes back the tool runs once.
func (g *gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, res, err := g.newCall(req)
	if res != nil || err != nil {
		return res, err
	}
	var st *requestState
	if req.Params.RequestState != "" {
		opened, err := g.openState(c, req.Params.RequestState)
		if err != nil {
			return nil, err
		}
		st, c.key = &opened, opened.Key
	}
	if st != nil && st.Mode == toolgatetype.ApprovalModeApprover {
		if res := openedPage(c, req.Params, st); res != nil {
			return res, nil
		}
	}
	approval, notApproved, err := callerApproval(c, req.Params, st)
	if err != nil {
		return nil, err
	}
	return g.ask(ctx, req, c, approval, notApproved)
}

// ask asks the gateway to make call c with the caller's approval (nil:
// none) and translates its outcome: an execution is a result, an approval
// the call lacks a question for the client (or the tool error saying why
// none can be asked), and a refusal a tool error. notApproved answers the
// call when the gateway took up the caller's answer and it approved
// nothing.
func (g *gateway) ask(ctx context.Context, req *mcp.CallToolRequest, c *toolCall, approval *toolgatetype.CallerApproval, notApproved *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	out := g.gw.CallTool(ctx, c.principal, toolgatetype.ToolCallRequest{
		Tool: c.tool.Tool.Slug, Input: c.args, IdempotencyKey: c.key, Approval: approval,
	})
	switch {
	case out.Result != nil:
		return resultOf(out.Result.Execution), nil
	case out.Refusal != nil:
		return g.refusal(ctx, c, out), nil
	case out.Approval.Mode == toolgatetype.ApprovalModeApprover:
		return g.approveByApprover(req, c, out.Approval)
	case out.Approval.Declined:
		return notApproved, nil
	}
	return g.approveByCaller(ctx, req, c, out.Approval)
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
		// The canonical form refuses a member twice, at any depth, as the
		// HTTP API refuses it in a body: arguments mean one thing. Which
		// member is worth saying.
		if m, ok := strictjson.Check(args, nil).(*strictjson.MemberError); ok && m.Duplicate {
			return nil, schemaError(v.Tool.Slug, []toolgatetype.FieldError{{Path: "arguments." + m.Path, Message: "appears more than once; send each member once"}}), nil
		}
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

// refusal explains the gateway's refusal of call c. A key busy or used
// means the call was raced by a retry of itself (the gateway gives the
// stored answer when there is one); a grant that lapsed is said so, and
// how to ask again.
func (g *gateway) refusal(ctx context.Context, c *toolCall, out *toolgatetype.ToolCallOutcome) *mcp.CallToolResult {
	te := out.Refusal
	switch {
	case te.Code == toolgatetype.CodeIdempotencyKeyInUse || te.Code == toolgatetype.CodeIdempotencyKeyReused:
		return toolError(nil, fmt.Sprintf("%s: this call of %s is already running; call again shortly for its result. Nothing more was charged.",
			toolgatetype.CodeIdempotencyKeyInUse, c.tool.Tool.Slug))
	case out.LapsedGrant != "":
		// A grant serves one call: a new call asks again.
		return toolError(nil, fmt.Sprintf("%s: the approval of this call of %s (approval request %s) can no longer be used: %s. "+
			"Call %s again with the same arguments to ask an approver again. Nothing was run or charged.",
			te.Code, c.tool.Tool.Slug, out.LapsedGrant, strings.TrimSuffix(te.Message, "."), c.tool.Tool.Slug))
	case te.Code == toolgatetype.CodeInternal:
		g.log.ErrorContext(ctx, "mcp call failed", "tool", c.tool.Tool.Slug, "error", te)
	}
	return refused(te)
}
