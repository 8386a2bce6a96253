package toolgate

import (
	"context"

	"github.com/toolgate/toolgate/toolgatetype"
)

// PrincipalGateway is a Gateway bound to one principal: the embedded
// counterpart of a remote client holding that principal's API key. It is
// a Caller. Safe for concurrent use.
type PrincipalGateway struct {
	gw        *Gateway
	principal string
}

// Interface guard.
var _ toolgatetype.Caller = (*PrincipalGateway)(nil)

// For returns the gateway bound to principal, for agent code that calls
// tools as that principal and should not be able to act as another.
func (g *Gateway) For(principal string) *PrincipalGateway {
	return &PrincipalGateway{gw: g, principal: principal}
}

// Principal is the principal the gateway is bound to.
func (p *PrincipalGateway) Principal() string { return p.principal }

// Quote is Gateway.Quote as the bound principal.
func (p *PrincipalGateway) Quote(ctx context.Context, tool string) (*toolgatetype.QuoteResult, error) {
	return p.gw.Quote(ctx, p.principal, tool)
}

// Call is Gateway.Call as the bound principal, with a new random
// Idempotency-Key when req has none, as a remote client sends one; the key
// comes back in the result.
func (p *PrincipalGateway) Call(ctx context.Context, req toolgatetype.CallRequest) (*toolgatetype.CallResult, error) {
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = toolgatetype.NewIdempotencyKey()
	}
	return p.gw.Call(ctx, p.principal, req)
}
