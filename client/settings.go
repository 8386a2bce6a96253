package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/toolgate/toolgate/toolgatetype"
)

// SpendControls returns this principal's own spend controls, the zero
// value when none are set, as toolgate.Gateway.SpendControls does. They
// only ever tighten the operator's: the limits in force for a tool are in
// its quote's Controls.
func (c *Client) SpendControls(ctx context.Context) (toolgatetype.SpendControls, error) {
	r := request{method: http.MethodGet, path: "/v1/spend-controls"}
	return c.spendControls(ctx, r)
}

// PutSpendControls replaces this principal's own limits over all tools and
// returns what is stored. sc.Tools, when not nil, replaces the per-tool
// controls (an empty map removes them all); nil keeps them as they are,
// in one atomic step of the gateway, so a concurrent change of one tool's
// controls survives.
func (c *Client) PutSpendControls(ctx context.Context, sc toolgatetype.SpendControls) (toolgatetype.SpendControls, error) {
	body, err := json.Marshal(sc)
	if err != nil {
		return toolgatetype.SpendControls{}, fmt.Errorf("client: encode the spend controls: %w", err)
	}
	return c.spendControls(ctx, request{method: http.MethodPut, path: "/v1/spend-controls", body: body})
}

func (c *Client) spendControls(ctx context.Context, r request) (toolgatetype.SpendControls, error) {
	sc, err := doJSON[toolgatetype.SpendControls](ctx, c, r)
	if err != nil {
		return toolgatetype.SpendControls{}, err
	}
	return *sc, nil
}

// ToolSpendControls returns this principal's own spend controls of one
// tool; not_found when none are set.
func (c *Client) ToolSpendControls(ctx context.Context, tool string) (toolgatetype.ToolSpendControls, error) {
	seg, err := toolSegment(tool)
	if err != nil {
		return toolgatetype.ToolSpendControls{}, err
	}
	return c.toolSpendControls(ctx, request{method: http.MethodGet, path: "/v1/spend-controls/tools/" + seg})
}

// PutToolSpendControls sets this principal's own spend controls of one
// tool, and returns them as stored.
func (c *Client) PutToolSpendControls(ctx context.Context, tool string, t toolgatetype.ToolSpendControls) (toolgatetype.ToolSpendControls, error) {
	seg, err := toolSegment(tool)
	if err != nil {
		return toolgatetype.ToolSpendControls{}, err
	}
	body, err := json.Marshal(t)
	if err != nil {
		return toolgatetype.ToolSpendControls{}, fmt.Errorf("client: encode the spend controls: %w", err)
	}
	return c.toolSpendControls(ctx, request{method: http.MethodPut, path: "/v1/spend-controls/tools/" + seg, body: body})
}

func (c *Client) toolSpendControls(ctx context.Context, r request) (toolgatetype.ToolSpendControls, error) {
	t, err := doJSON[toolgatetype.ToolSpendControls](ctx, c, r)
	if err != nil {
		return toolgatetype.ToolSpendControls{}, err
	}
	return *t, nil
}

// DeleteToolSpendControls removes this principal's own spend controls of
// one tool; not_found when none are set. Retried after an answer that was
// lost, it reports not_found when the first attempt removed them.
func (c *Client) DeleteToolSpendControls(ctx context.Context, tool string) error {
	seg, err := toolSegment(tool)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, request{method: http.MethodDelete, path: "/v1/spend-controls/tools/" + seg})
	return err
}

// Approvals lists this principal's standing approvals, each marked stale
// when the tool's digest has changed since, as toolgate.Gateway.Approvals
// does.
func (c *Client) Approvals(ctx context.Context) ([]toolgatetype.ToolApproval, error) {
	list, err := doJSON[struct {
		Approvals []toolgatetype.ToolApproval `json:"approvals"`
	}](ctx, c, request{method: http.MethodGet, path: "/v1/approvals"})
	if err != nil {
		return nil, err
	}
	return list.Approvals, nil
}

// SetApproval records this principal's standing approval of a tool's
// current version, as toolgate.Gateway.SetApproval does: digest must be
// the tool's current manifest digest.
func (c *Client) SetApproval(ctx context.Context, tool string, mode toolgatetype.StandingMode, digest string) (*toolgatetype.StandingApproval, error) {
	seg, err := toolSegment(tool)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(toolgatetype.ApprovalBody{Mode: &mode, ManifestDigest: &digest})
	if err != nil {
		return nil, fmt.Errorf("client: encode the approval: %w", err)
	}
	return doJSON[toolgatetype.StandingApproval](ctx, c, request{method: http.MethodPut, path: "/v1/approvals/" + seg, body: body})
}

// DeleteApproval removes this principal's standing approval of a tool;
// not_found when there is none. Retried after an answer that was lost, it
// reports not_found when the first attempt removed it.
func (c *Client) DeleteApproval(ctx context.Context, tool string) error {
	seg, err := toolSegment(tool)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, request{method: http.MethodDelete, path: "/v1/approvals/" + seg})
	return err
}
