package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/strictjson"
	"github.com/toolgate/toolgate/toolgatetype"
)

// toolCall is a tools/call the gateway prepared (who calls, which tool,
// with which arguments in canonical form), under its Idempotency-Key.
type toolCall struct {
	*toolgate.PreparedCall
	key string
}

// callTool answers a tools/call by asking the gateway to prepare it
// (Gateway.Prepare: the tool, its arguments in canonical form, checked
// against its input schema) and then to make it (CallPreparedTool), which
// quotes, approves and calls as its own pipeline: this only names the
// call's key, and translates the outcome into a result, a question for the
// client, or a tool error.
//
// A call made again with the requestState of a question it was asked
// (protocol 2026-07-28) is that first call: the state is opened and
// checked against this call before anything else, and its key is the
// first call's, so however often the state comes back the tool runs once.
func (g *gateway) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx = withCallerClaims(ctx, req)
	c, res, err := g.newCall(ctx, req)
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
	out := g.gw.CallPreparedTool(ctx, c.PreparedCall, c.key, approval)
	switch {
	case out.Result != nil:
		return resultOf(out.Result.Execution), nil
	case out.Refusal != nil && out.Refusal.Code == toolgatetype.CodeToolNotFound:
		// A tool a rule hides from the caller (or one removed meanwhile)
		// is not there, in the very words of one that never was.
		return nil, unknownTool(req.Params.Name)
	case out.Refusal != nil:
		return g.refusal(ctx, c, out), nil
	case out.Approval.Mode == toolgatetype.ApprovalModeApprover:
		return g.approveByApprover(req, c, out.Approval)
	case out.Approval.Declined:
		return notApproved, nil
	}
	return g.approveByCaller(ctx, req, c, out.Approval)
}

// newCall has the gateway prepare the call of the tool the SDK routed
// here, and names the call's Idempotency-Key. A tool error comes back for
// bad arguments, an error for an unknown tool or caller, or one a rule
// hides from the caller.
func (g *gateway) newCall(ctx context.Context, req *mcp.CallToolRequest) (*toolCall, *mcp.CallToolResult, error) {
	principal, err := g.principalOf(req)
	if err != nil {
		return nil, nil, err
	}
	name := req.Params.Name
	args := bytes.TrimSpace(req.Params.Arguments)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	if args[0] != '{' {
		return nil, schemaError(name, []toolgatetype.FieldError{{Path: "arguments", Message: "must be an object"}}), nil
	}
	p, err := g.gw.Prepare(principal, name, args)
	if err != nil {
		if g.hidden(ctx, principal, name) {
			return nil, nil, unknownTool(name)
		}
		res, err := unprepared(name, args, err)
		return nil, res, err
	}
	key, err := idempotencyKey(req.Params.Meta, p.Tool().Tool.ID, p.Input())
	if err != nil {
		return nil, refused(err), nil
	}
	return &toolCall{PreparedCall: p, key: key}, nil, nil
}

// hidden reports whether a rule hides the tool name from principal, for a
// call refused before the gateway decided the rules (its arguments wrong,
// say): the refusal would tell that the tool exists. Asked only of calls
// already refused, as it reads the tool's entry.
func (g *gateway) hidden(ctx context.Context, principal, name string) bool {
	_, err := g.gw.Entry(ctx, name, toolgatetype.EntryOptions{Principal: principal})
	var te *toolgatetype.Error
	return errors.As(err, &te) && te.Code == toolgatetype.CodeToolNotFound
}

// unprepared translates the gateway's refusal to prepare a call of tool
// name with args: the arguments said wrong in MCP's words (the
// "arguments", where the gateway says "input"), a tool it does not know as
// the protocol's unknown tool, and any other refusal as a tool error.
func unprepared(name string, args []byte, err error) (*mcp.CallToolResult, error) {
	var te *toolgatetype.Error
	if !errors.As(err, &te) {
		return refused(err), nil
	}
	switch te.Code {
	case toolgatetype.CodeToolNotFound:
		return nil, unknownTool(name)
	case toolgatetype.CodeInputInvalid:
		failures := make([]toolgatetype.FieldError, len(te.Details))
		for i, f := range te.Details {
			failures[i] = f
			if rest, ok := strings.CutPrefix(f.Path, "input"); ok {
				failures[i].Path = "arguments" + rest
			}
		}
		return schemaError(name, failures), nil
	case toolgatetype.CodeInvalidRequest:
		// Arguments that have no canonical form. The canonical form
		// refuses a member twice, at any depth, as the HTTP API refuses it
		// in a body: arguments mean one thing. Which member is worth
		// saying; looking for it costs only a call already refused.
		if m, ok := strictjson.Check(args, nil).(*strictjson.MemberError); ok && m.Duplicate {
			return schemaError(name, []toolgatetype.FieldError{{Path: "arguments." + m.Path, Message: "appears more than once; send each member once"}}), nil
		}
		return schemaError(name, []toolgatetype.FieldError{{Path: "arguments", Message: "must be valid JSON"}}), nil
	}
	return refused(err), nil
}

// refusal explains the gateway's refusal of call c, as every refusal is
// said (refused): the HTTP error body. A key busy or used means the call
// was raced by a retry of itself (the gateway gives the stored answer when
// there is one); a grant that lapsed is said so, and how to ask again.
func (g *gateway) refusal(ctx context.Context, c *toolCall, out *toolgatetype.ToolCallOutcome) *mcp.CallToolResult {
	te := out.Refusal
	switch {
	case te.Code == toolgatetype.CodeIdempotencyKeyInUse || te.Code == toolgatetype.CodeIdempotencyKeyReused:
		return refusal(toolgatetype.ErrorBody{Error: toolgatetype.ErrorDetail{
			Code: toolgatetype.CodeIdempotencyKeyInUse,
			Message: fmt.Sprintf("this call of %s is already running; call again shortly for its result. Nothing more was charged.",
				c.Tool().Tool.Slug),
		}})
	case out.LapsedGrant != "":
		// A grant serves one call: a new call asks again.
		body := toolgatetype.BodyOf(te)
		body.Error.Message = fmt.Sprintf("the approval of this call of %s (approval request %s) can no longer be used: %s. "+
			"Call %s again with the same arguments to ask an approver again. Nothing was run or charged.",
			c.Tool().Tool.Slug, out.LapsedGrant, strings.TrimSuffix(te.Message, "."), c.Tool().Tool.Slug)
		return refusal(body)
	case te.Code == toolgatetype.CodeInternal:
		g.log.ErrorContext(ctx, "mcp call failed", "tool", c.Tool().Tool.Slug, "error", te)
	}
	return refused(te)
}
