package toolgate

import (
	"context"
	"errors"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// PriorCall is the call a caller already made under an Idempotency-Key.
type PriorCall struct {
	// Result is the finished call's stored result, marked Replayed; nil
	// while the call is still running (or its run was abandoned).
	Result *toolgatetype.CallResult
	// QuoteID is the quote an unfinished call was made under; empty once
	// it has finished. A Call with this quote and the same input, approval
	// and key is the same request: it gets idempotency_key_in_use while the
	// run holds its lease, and takes the run over once the lease has ended.
	QuoteID string
}

// PriorCall returns the call the caller made under key, or nil when the key
// holds none. It lets a layer that quotes on the caller's behalf (the MCP
// server, which gets no quote id from its client) answer a retry before
// quoting again: a quote is part of what a key's request is, so a retry
// under a new quote would be another request.
func (g *Gateway) PriorCall(ctx context.Context, principal, key string) (*PriorCall, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	if err := toolgatetype.ValidateIdempotencyKey(key); err != nil {
		return nil, err
	}
	rec, err := g.store.GetIdempotency(ctx, principal, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, internalError(err)
	case rec.Finished:
		res, err := replay(rec.Response)
		if err != nil {
			return nil, err
		}
		return &PriorCall{Result: res}, nil
	}
	exec, err := g.store.GetExecution(ctx, rec.ExecutionID)
	if err != nil {
		return nil, internalError(err)
	}
	return &PriorCall{QuoteID: exec.QuoteID.String()}, nil
}
