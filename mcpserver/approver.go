package mcpserver

import (
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// approveByApprover translates the approval an approver-mode call lacks,
// which only an approver's grant gives: whatever the client says, in _meta
// or in a form its user answers, approves nothing here. A request an
// approver denied is a tool error until it would have expired; a pending
// one, made for this call or found from an earlier try of it, is where the
// client is sent, saying so when it replaces an approval that expired
// unused.
func (g *gateway) approveByApprover(req *mcp.CallToolRequest, c *toolCall, a *toolgatetype.ToolCallApproval) (*mcp.CallToolResult, error) {
	r := a.Request
	if r.Status == toolgatetype.ApprovalStatusDenied {
		return toolError(nil, fmt.Sprintf("%s: an approver denied this call of %s (approval request %s). Nothing was run or charged. "+
			"Calling again with the same arguments before %s gets the same answer.",
			toolgatetype.CodeApprovalDenied, c.Tool().Tool.Slug, r.ID, r.ExpiresAt.Format(time.RFC3339))), nil
	}
	var lapsed string
	if e := a.Expired; e != nil {
		lapsed = fmt.Sprintf("The approval of request %s expired unused at %s (an approval lasts as long as the quote "+
			"it was given for), so it is asked for again. ", e.ID, e.ExpiresAt.Format(time.RFC3339))
	}
	return g.sendToApprover(req, c, r, lapsed)
}

// sendToApprover sends the client to the page where an approver decides
// request r: by URL-mode elicitation when the client can open one (the
// URL-elicitation-required error, with the request's id as elicitation id,
// after which the client calls again), else by a tool error carrying the
// URL. lapsed, when not empty, says why an earlier approval did not do.
func (g *gateway) sendToApprover(req *mcp.CallToolRequest, c *toolCall, r *toolgatetype.ApprovalRequest, lapsed string) (*mcp.CallToolResult, error) {
	url := g.approveURL(req, r.ID)
	question := fmt.Sprintf("Approve %s for $%s? version %s", r.Tool.Name, r.TotalUSD, r.ManifestDigest)
	if url == "" {
		return toolError(nil, fmt.Sprintf("%s: %s%s needs an approver's approval (%s). Approval request %s waits for one, but this "+
			"server has no address of its approval page to give (its operator sets approvals.publicUrl): an approver finds "+
			"the request among their pending ones on a toolgate server that shares this gateway's store. Once it is approved, "+
			"call %s again with the same arguments. Nothing was run or charged.",
			toolgatetype.CodeApprovalRequired, lapsed, c.Tool().Tool.Slug, question, r.ID, c.Tool().Tool.Slug)), nil
	}
	if urlElicitation(req.ClientCapabilities()) {
		page := &mcp.ElicitParams{
			Mode:          "url",
			Message:       lapsed + question + ". An approver decides on this page; once approved, the call can be made again.",
			URL:           url,
			ElicitationID: r.ID,
		}
		if multiRoundTrip(req) {
			// The client sends its user to the page, and calls again with
			// this state once they are done there.
			return g.inputRequired(c, page, newState(c, toolgatetype.ApprovalModeApprover, r.ManifestDigest, r.QuoteID, r.ID, r.ExpiresAt))
		}
		// An older client is told with the URL-elicitation-required error;
		// its session hears when the request is decided.
		g.decisions.wait(req.Session, c.Principal(), r)
		return nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{page})
	}
	return toolError(nil, fmt.Sprintf("%s: %s%s needs an approver's approval (%s). An approver decides at %s (approval request %s): "+
		"give your user this link. Once it is approved, call %s again with the same arguments. Nothing was run or charged.",
		toolgatetype.CodeApprovalRequired, lapsed, c.Tool().Tool.Slug, question, url, r.ID, c.Tool().Tool.Slug)), nil
}

// urlElicitation reports whether a client can send its user to a URL.
func urlElicitation(caps *mcp.ClientCapabilities) bool {
	return caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
}

// approveURL is the address of the page where a person decides approval
// request id: under Options.PublicURL when set; else, over streamable
// HTTP, under the address the request carrying the call reached the
// server at, where the HTTP API is taken to be served beside this handler.
// "" when there is neither.
func (g *gateway) approveURL(req *mcp.CallToolRequest, id string) string {
	base := g.opts.PublicURL
	if base == "" {
		if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
			base, _ = extra.TokenInfo.Extra[extraBaseURL].(string)
		}
	}
	if base == "" {
		return ""
	}
	return strings.TrimSuffix(base, "/") + httpx.ApprovalPagePath(id)
}

// extraBaseURL names, among the facts the HTTP handler attaches to each
// request's token, the address the request reached the server at.
const extraBaseURL = "toolgate/baseUrl"

// openedPage answers a call made again in approver mode with its user's
// answer to being sent to the approval page (protocol 2026-07-28, st the
// state it was sent with). Having gone there proves nothing: the gateway
// looks for an approver's grant, so nil lets the call through to it. A user
// who would not go gets a tool error, and nothing runs.
func openedPage(c *toolCall, p *mcp.CallToolParamsRaw, st *requestState) *mcp.CallToolResult {
	answer, ok := p.InputResponses[approvalInput].(*mcp.ElicitResult)
	if !ok || answer.Action == "accept" {
		return nil
	}
	return toolError(nil, fmt.Sprintf("%s: the user did not open the approval page of this call of %s (approval request %s). "+
		"Nothing was run or charged; the request waits for an approver until %s.",
		toolgatetype.CodeApprovalRequired, c.Tool().Tool.Slug, st.Request, time.Unix(st.Expires, 0).UTC().Format(time.RFC3339)))
}
