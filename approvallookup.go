package toolgate

import (
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/toolgatetype"
)

// ApprovalLookup names one call whose approval requests a caller looks for:
// a tool and an input, whatever the quote or the tool's version.
type ApprovalLookup struct {
	// Tool is the tool's slug or id.
	Tool string
	// Input is the call's input. It is compared in RFC 8785 canonical form,
	// by its SHA-256, as a grant is bound to it, so spacing and key order
	// do not matter.
	Input json.RawMessage
	// Status keeps the requests of one status, as ApprovalListOptions.Status
	// does: "" means pending, and ApprovalStatusAll every status.
	Status toolgatetype.ApprovalStatus
}

// LatestApprovalRequest returns principal's newest approval request for the
// call l names, or nil when it has none. It reads the store, never this
// process's memory, so a request made through one instance of a gateway is
// found through any other sharing its store: a caller that asked for
// approval once finds the grant when it makes the same call again, with
// nothing to remember in between.
func (g *Gateway) LatestApprovalRequest(ctx context.Context, principal string, l ApprovalLookup) (*toolgatetype.ApprovalRequest, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	v, err := g.lookup(l.Tool)
	if err != nil {
		return nil, err
	}
	input, err := canonicalInput(l.Input)
	if err != nil {
		return nil, err
	}
	now := g.clock.Now().UTC()
	f, err := statusFilter(l.Status, now)
	if err != nil {
		return nil, err
	}
	f.Principals, f.ToolID, f.InputSHA256, f.Limit = []string{principal}, v.Tool.ID, inputSHA256(input), 1
	list, err := g.store.ListApprovalRequests(ctx, f)
	if err != nil {
		return nil, internalError(err)
	}
	if len(list) == 0 {
		return nil, nil
	}
	out := g.approvalView(list[0], now)
	return &out, nil
}
