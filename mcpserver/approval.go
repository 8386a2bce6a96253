package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate/toolgatetype"
)

// metaApproval is the _meta entry in which an agent that asked its user
// itself gives the manifest digest the user approved (caller mode).
const metaApproval = "toolgate/approval"

// approvalInput names the approval form among a result's input requests.
const approvalInput = "toolgate/approval"

// Answers of the approval form's "remember" field.
const (
	rememberOnce     = "once"
	rememberNeverAsk = "never_ask"
)

// approveByCaller asks the caller to approve the call c as the gateway
// asked: the person at the client answers a form, which a client on
// protocol 2026-07-28 or later carries to the call made again, with the
// sealed requestState that names what it answers, and an older client is
// sent within this request, after which the gateway is asked again with the
// answer. A client that cannot show a form gets a tool error that says how
// to approve.
func (g *gateway) approveByCaller(ctx context.Context, req *mcp.CallToolRequest, c *toolCall, a *toolgatetype.ToolCallApproval) (*mcp.CallToolResult, error) {
	if !formElicitation(req.ClientCapabilities()) {
		return toolError(nil, fmt.Sprintf("%s: calling %s needs approval of version %s for $%s (%s). "+
			"This client cannot ask its user (no form elicitation), so ask them yourself: if they approve, call again "+
			`with the same arguments and _meta {"%s": "%s"}. Nothing was run or charged.`,
			toolgatetype.CodeApprovalRequired, c.Tool().Tool.Slug, a.ManifestDigest, a.TotalUSD,
			a.Requirement, metaApproval, a.ManifestDigest)), nil
	}
	form := approvalForm(a)
	if multiRoundTrip(req) {
		// The client asks its user and calls again with the answer and
		// this state, which callTool opens.
		return g.inputRequired(c, form, newState(c, toolgatetype.ApprovalModeCaller, a.ManifestDigest, a.QuoteID, "", a.ExpiresAt))
	}
	// An older client is asked directly, within this request.
	asking, cancel := context.WithTimeout(ctx, g.opts.ApprovalTimeout)
	defer cancel()
	defer context.AfterFunc(g.closing, cancel)()
	answer, err := req.Session.Elicit(asking, form)
	if err != nil {
		g.log.InfoContext(ctx, "approval not answered", "tool", c.Tool().Tool.Slug, "error", err)
		return toolError(nil, fmt.Sprintf("%s: the approval of %s got no answer from the client. Nothing was run or charged.",
			toolgatetype.CodeApprovalRequired, c.Tool().Tool.Slug)), nil
	}
	approval, notApproved := answerOf(c, answer, a.QuoteID, a.ManifestDigest)
	if notApproved != nil {
		return notApproved, nil
	}
	// The person may have taken minutes, in which the tool may have been
	// removed, blocked or changed: the call is prepared again, of the tool
	// as it is now, as a call made again with the answer would be.
	p, err := g.gw.Prepare(c.Principal(), c.Tool().Tool.Slug, c.Input())
	if err != nil {
		return refused(err), nil
	}
	c = &toolCall{PreparedCall: p, key: c.key}
	return g.ask(ctx, req, c, approval, nil)
}

// inputRequired is the result that asks the client for the answer to
// question (protocol 2026-07-28), with st sealed as its requestState.
func (g *gateway) inputRequired(c *toolCall, question *mcp.ElicitParams, st requestState) (*mcp.CallToolResult, error) {
	sealed, err := g.sealState(st)
	if err != nil {
		g.log.Error("sealing a requestState failed", "tool", c.Tool().Tool.Slug, "error", err)
		return toolError(nil, fmt.Sprintf("%s: the approval of %s could not be asked for. Nothing was run or charged.",
			toolgatetype.CodeInternal, c.Tool().Tool.Slug)), nil
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalInput: question}, RequestState: sealed}, nil
}

// multiRoundTrip reports whether the client asks its user itself and
// calls again with the answer (protocol 2026-07-28 or later), rather than
// answering the server's own request within the call.
func multiRoundTrip(req *mcp.CallToolRequest) bool {
	return req.ProtocolVersion() >= multiRoundTripVersion
}

// multiRoundTripVersion is the first protocol version in which a server
// asks the client through the result (input requests), not a request of
// its own.
const multiRoundTripVersion = "2026-07-28"

// formElicitation reports whether a client can show its user a form.
func formElicitation(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil // neither named means form, as before modes existed
}

// approvalForm asks the person at the client to approve one call of this
// exact version at this total.
func approvalForm(a *toolgatetype.ToolCallApproval) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: fmt.Sprintf("Approve %s for $%s? version %s", a.Tool.Name, a.TotalUSD, a.ManifestDigest),
		RequestedSchema: map[string]any{
			"type":     "object",
			"required": []string{"approve"},
			"properties": map[string]any{
				"approve": map[string]any{
					"type":        "boolean",
					"title":       "Approve",
					"description": "Run this call of this exact version at this price.",
				},
				"remember": map[string]any{
					"type":        "string",
					"title":       "Remember",
					"description": "Ask again next time, or never ask again for this exact version.",
					"enum":        []string{rememberOnce, rememberNeverAsk},
					"enumNames":   []string{"Ask me next time", "Never ask again for this version"},
					"default":     rememberOnce,
				},
			},
		},
	}
}

// callerApproval is the caller's approval a tools/call carries, nil when
// none: the answer to the approval form, which a client on protocol
// 2026-07-28 or later sends with the call made again and the state it was
// asked with (st, already opened and checked), else the digest an agent
// that asked its user itself gives in _meta. notApproved explains an answer
// that approves nothing, should the gateway take it up: only a principal
// in caller mode is asked, and an earlier run under the key answers first.
// An answer without a state approves nothing the server can name: it is
// the protocol's invalid params.
func callerApproval(c *toolCall, p *mcp.CallToolParamsRaw, st *requestState) (a *toolgatetype.CallerApproval, notApproved *mcp.CallToolResult, err error) {
	answer, answered := p.InputResponses[approvalInput].(*mcp.ElicitResult)
	switch {
	case answered && st == nil:
		return nil, nil, invalidState("an approval answer came without the requestState it was asked with")
	case answered && st.Mode == toolgatetype.ApprovalModeCaller:
		a, notApproved := answerOf(c, answer, st.Quote, st.Digest)
		return a, notApproved, nil
	}
	if given, ok := p.Meta[metaApproval]; ok {
		approved, _ := given.(string)
		return &toolgatetype.CallerApproval{ManifestDigest: approved}, nil, nil
	}
	return nil, nil, nil
}

// answerOf is the approval the person at the client gave, answering the
// form that asked about this digest under this quote: the digest asked
// about, under the quote asked under, remembered as a standing approval of
// the version when they asked never to be asked again. An answer that does
// not approve is declined, with the tool error that says so.
func answerOf(c *toolCall, answer *mcp.ElicitResult, quoteID, digest string) (*toolgatetype.CallerApproval, *mcp.CallToolResult) {
	if answer == nil || answer.Action != "accept" || answer.Content["approve"] != true {
		action := "declined"
		if answer != nil && answer.Action == "cancel" {
			action = "cancelled"
		}
		return &toolgatetype.CallerApproval{Declined: true}, toolError(nil, fmt.Sprintf("%s: the user %s the call of %s. Nothing was run or charged.",
			toolgatetype.CodeApprovalRequired, action, c.Tool().Tool.Slug))
	}
	a := &toolgatetype.CallerApproval{QuoteID: quoteID, ManifestDigest: digest}
	if answer.Content["remember"] == rememberNeverAsk {
		a.Remember = toolgatetype.ApprovalNeverAsk
	}
	return a, nil
}
