package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/toolgatetype"
)

// approvalModeOf is principal's approval mode, as the gateway's approver
// directory says.
func (g *gateway) approvalModeOf(ctx context.Context, principal string) (approvalMode, error) {
	mode, err := g.gw.ApprovalMode(ctx, principal)
	if err != nil {
		return callerMode, err
	}
	if mode == toolgatetype.ApprovalModeCaller {
		return callerMode, nil
	}
	return approverMode, nil
}

// approveByApprover is the approver-mode step of a tools/call that needs
// approval, which only an approver's grant gives: whatever the client
// says, in _meta or in a form its user answers, approves nothing here.
//
// The call's newest approval request is looked up in the store, by
// principal, tool and canonical arguments, so that a client's retry finds
// what its first try asked for on any instance of the gateway:
//   - approved, for the tool's current version: the call runs with the
//     grant, under the quote the request was made for;
//   - pending: the client is sent to that request's page again;
//   - denied: a tool error, until the request would have expired; the same
//     call made after that asks again;
//   - none, used by an earlier call, expired, or for another version: a new
//     request under quote q, and the client is sent to its page. An approval
//     that expired unused is said so.
func (g *gateway) approveByApprover(ctx context.Context, req *mcp.CallToolRequest, c *toolCall, q *toolgatetype.QuoteResult) (*mcp.CallToolResult, error) {
	found, err := g.gw.LatestApprovalRequest(ctx, c.principal, toolgate.ApprovalLookup{
		Tool: c.tool.Tool.ID, Input: c.args, Status: toolgatetype.ApprovalStatusAll,
	})
	if err != nil {
		return refused(err), nil
	}
	var lapsed string
	if found != nil && found.ManifestDigest == *q.Quote.ManifestDigest {
		switch found.Status {
		case toolgatetype.ApprovalStatusApproved:
			return g.run(ctx, c, approval{quoteID: found.QuoteID, digest: found.ManifestDigest, grant: found.ID}), nil
		case toolgatetype.ApprovalStatusPending:
			return g.sendToApprover(req, c, found, "")
		case toolgatetype.ApprovalStatusDenied:
			if g.gw.Clock().Now().Before(found.ExpiresAt) {
				return toolError(nil, fmt.Sprintf("%s: an approver denied this call of %s (approval request %s). Nothing was run or charged. "+
					"Calling again with the same arguments before %s gets the same answer.",
					toolgatetype.CodeApprovalDenied, c.tool.Tool.Slug, found.ID, found.ExpiresAt.Format(time.RFC3339))), nil
			}
		case toolgatetype.ApprovalStatusExpired:
			if found.DecidedBy != "" {
				lapsed = fmt.Sprintf("The approval of request %s expired unused at %s (an approval lasts as long as the quote "+
					"it was given for), so it is asked for again. ", found.ID, found.ExpiresAt.Format(time.RFC3339))
			}
		}
	}
	r, err := g.gw.RequestApproval(ctx, c.principal, toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: c.args})
	if err != nil {
		return refused(err), nil
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
			toolgatetype.CodeApprovalRequired, lapsed, c.tool.Tool.Slug, question, r.ID, c.tool.Tool.Slug)), nil
	}
	if urlElicitation(req.ClientCapabilities()) {
		return nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{
			Mode:          "url",
			Message:       lapsed + question + ". An approver decides on this page; once approved, the call can be made again.",
			URL:           url,
			ElicitationID: r.ID,
		}})
	}
	return toolError(nil, fmt.Sprintf("%s: %s%s needs an approver's approval (%s). An approver decides at %s (approval request %s): "+
		"give your user this link. Once it is approved, call %s again with the same arguments. Nothing was run or charged.",
		toolgatetype.CodeApprovalRequired, lapsed, c.tool.Tool.Slug, question, url, r.ID, c.tool.Tool.Slug)), nil
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
	return strings.TrimSuffix(base, "/") + httpapi.ApprovalPagePath(id)
}

// extraBaseURL names, among the facts the HTTP handler attaches to each
// request's token, the address the request reached the server at.
const extraBaseURL = "toolgate/baseUrl"
