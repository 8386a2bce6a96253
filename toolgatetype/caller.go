package toolgatetype

import "context"

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
