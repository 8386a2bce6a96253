package toolgate

import (
	"context"

	"github.com/google/uuid"
)

// Caller is what agent code needs of a gateway: quote a tool and call it,
// as one principal. An embedded gateway bound to a principal (Gateway.For)
// and a remote gateway's client (package client, holding the principal's
// API key) both satisfy it, with the same results and the same *Error
// codes, so agent code written against Caller runs either way.
//
// Call sends req.IdempotencyKey, or a new random key when it is empty, and
// returns the key in CallResult.IdempotencyKey: to retry a call whose
// outcome is unknown, call again with that key and the same request.
type Caller interface {
	Quote(ctx context.Context, tool string) (*QuoteResult, error)
	Call(ctx context.Context, req CallRequest) (*CallResult, error)
}

// PrincipalGateway is a Gateway bound to one principal: the embedded
// counterpart of a remote client holding that principal's API key. It is
// a Caller. Safe for concurrent use.
type PrincipalGateway struct {
	gw        *Gateway
	principal string
}

// Interface guard.
var _ Caller = (*PrincipalGateway)(nil)

// For returns the gateway bound to principal, for agent code that calls
// tools as that principal and should not be able to act as another.
func (g *Gateway) For(principal string) *PrincipalGateway {
	return &PrincipalGateway{gw: g, principal: principal}
}

// Principal is the principal the gateway is bound to.
func (p *PrincipalGateway) Principal() string { return p.principal }

// Quote is Gateway.Quote as the bound principal.
func (p *PrincipalGateway) Quote(ctx context.Context, tool string) (*QuoteResult, error) {
	return p.gw.Quote(ctx, p.principal, tool)
}

// Call is Gateway.Call as the bound principal, with a new random
// Idempotency-Key when req has none, as a remote client sends one; the key
// comes back in the result.
func (p *PrincipalGateway) Call(ctx context.Context, req CallRequest) (*CallResult, error) {
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = NewIdempotencyKey()
	}
	return p.gw.Call(ctx, p.principal, req)
}

// NewIdempotencyKey returns a new random Idempotency-Key, for a call whose
// caller has no natural key of its own.
func NewIdempotencyKey() string { return uuid.NewString() }
