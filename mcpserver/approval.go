package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
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

// approvalMode is how a principal's calls get approved (contract section 14).
type approvalMode int

const (
	// callerMode: the caller approves, with the digest in _meta or a form
	// the person at the client answers.
	callerMode approvalMode = iota
	// approverMode: only an approver, a person with a key of their own,
	// approves, through an approval request.
	approverMode
)

// approveByCaller gets a caller-mode approval of the call c under quote q
// and runs it, or says why not: the digest the agent gives in _meta, else
// the answer of the person at the client to a form, else a tool error that
// says how to approve.
func (g *gateway) approveByCaller(ctx context.Context, req *mcp.CallToolRequest, c *toolCall, q *toolgatetype.QuoteResult) *mcp.CallToolResult {
	digest := *q.Quote.ManifestDigest
	if given, ok := req.Params.Meta[metaApproval]; ok {
		approved, _ := given.(string)
		// The gateway checks it is this very digest (approval_mismatch).
		return g.run(ctx, c, approval{quoteID: q.Quote.ID, digest: approved})
	}
	if !formElicitation(req.ClientCapabilities()) {
		return toolError(nil, fmt.Sprintf("%s: calling %s needs approval of version %s for $%s (%s). "+
			"This client cannot ask its user (no form elicitation), so ask them yourself: if they approve, call again "+
			`with the same arguments and _meta {"%s": "%s"}. Nothing was run or charged.`,
			toolgatetype.CodeApprovalRequired, c.tool.Tool.Slug, digest, q.Quote.TotalUSD,
			q.Policy.Approval.Requirement, metaApproval, digest))
	}
	form := approvalForm(q)
	state := approvalState{QuoteID: q.Quote.ID, Digest: digest}
	if req.ProtocolVersion() >= multiRoundTripVersion {
		// The client asks its user and calls again with the answer (and
		// this state), which runAnswered takes up.
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalInput: form}, RequestState: state.encode()}
	}
	// An older client is asked directly, within this request.
	asking, cancel := context.WithTimeout(ctx, g.opts.ApprovalTimeout)
	defer cancel()
	defer context.AfterFunc(g.closing, cancel)()
	answer, err := req.Session.Elicit(asking, form)
	if err != nil {
		g.log.InfoContext(ctx, "approval not answered", "tool", c.tool.Tool.Slug, "error", err)
		return toolError(nil, fmt.Sprintf("%s: the approval of %s got no answer from the client. Nothing was run or charged.",
			toolgatetype.CodeApprovalRequired, c.tool.Tool.Slug))
	}
	return g.runIfApproved(ctx, c, answer, state)
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
func approvalForm(q *toolgatetype.QuoteResult) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: fmt.Sprintf("Approve %s for $%s? version %s", q.Tool.Name, q.Quote.TotalUSD, *q.Quote.ManifestDigest),
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

// approvalState is what a call asked to approve, carried by the client from
// the result that asks to its retry with the answer. The client could alter
// it, but gains nothing: the gateway checks the quote is this caller's for
// this tool and the digest is the tool's current one.
type approvalState struct {
	QuoteID string `json:"quoteId"`
	Digest  string `json:"digest"`
}

func (s approvalState) encode() string {
	b, _ := json.Marshal(s)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeApprovalState(s string) (approvalState, bool) {
	var st approvalState
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(raw, &st) != nil || st.QuoteID == "" || st.Digest == "" {
		return approvalState{}, false
	}
	return st, true
}

// approvalAnswer is the answer to the approval form a retried call carries
// (protocol 2026-07-28 and later), if it carries one.
func approvalAnswer(p *mcp.CallToolParamsRaw) (*mcp.ElicitResult, string, bool) {
	answer, ok := p.InputResponses[approvalInput].(*mcp.ElicitResult)
	return answer, p.RequestState, ok
}

// runAnswered runs a retried call whose user answered the approval form.
func (g *gateway) runAnswered(ctx context.Context, c *toolCall, answer *mcp.ElicitResult, state string) *mcp.CallToolResult {
	st, ok := decodeApprovalState(state)
	if !ok {
		return toolError(nil, fmt.Sprintf("%s: the approval answer came without the state it was asked with; call %s again. Nothing was run or charged.",
			toolgatetype.CodeInvalidRequest, c.tool.Tool.Slug))
	}
	return g.runIfApproved(ctx, c, answer, st)
}

// runIfApproved runs the call if the person approved it, recording a
// standing approval of the version first when they asked never to be asked
// again; otherwise it says the call was not approved.
func (g *gateway) runIfApproved(ctx context.Context, c *toolCall, answer *mcp.ElicitResult, st approvalState) *mcp.CallToolResult {
	if answer == nil || answer.Action != "accept" || answer.Content["approve"] != true {
		action := "declined"
		if answer != nil && answer.Action == "cancel" {
			action = "cancelled"
		}
		return toolError(nil, fmt.Sprintf("%s: the user %s the call of %s. Nothing was run or charged.",
			toolgatetype.CodeApprovalRequired, action, c.tool.Tool.Slug))
	}
	if answer.Content["remember"] == rememberNeverAsk {
		if _, err := g.gw.SetApproval(ctx, c.principal, c.tool.Tool.Slug, toolgatetype.ApprovalNeverAsk, st.Digest); err != nil {
			// The person approved this call whatever becomes of the
			// standing approval; they will be asked again next time.
			g.log.WarnContext(ctx, "could not remember an approval", "tool", c.tool.Tool.Slug, "error", err)
		}
	}
	return g.run(ctx, c, approval{quoteID: st.QuoteID, digest: st.Digest})
}
