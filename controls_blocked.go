package toolgate

import (
	"context"
	"errors"
	"fmt"

	"github.com/toolgate/toolgate/internal/spendlimits"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// BlockedTools returns the slugs of the tools a principal's spend controls
// block ("allowed": false), by the operator's controls or the caller's own.
// Every call of such a tool is refused, so a listing for the principal
// can leave them out.
func (g *Gateway) BlockedTools(ctx context.Context, principal string) (map[string]bool, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	own, err := g.store.GetSpendControls(ctx, principal)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, internalError(err)
	}
	var op toolgatetype.SpendControls
	if g.controls != nil {
		if op, err = g.controls.SpendControls(ctx, principal); err != nil {
			return nil, internalError(fmt.Errorf("operator spend controls: %w", err))
		}
	}
	blocked := map[string]bool{}
	for _, c := range []toolgatetype.SpendControls{op, own} {
		for slug := range c.Tools {
			// The same layering as a call's limits: the operator's, then
			// the caller's own, which only tighten.
			var l spendlimits.Limits
			l.Apply(op, slug, false)
			l.Apply(own, slug, true)
			if l.Tool != nil && !l.Tool.Allowed {
				blocked[slug] = true
			}
		}
	}
	return blocked, nil
}
