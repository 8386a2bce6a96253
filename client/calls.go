package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Quote prices a call of the tool (by slug or id) and returns the policy
// and spend-control decisions for this client's principal, as
// toolgate.Gateway.Quote does. A quote is stored by the gateway, so it is
// retried only when the connection was refused.
func (c *Client) Quote(ctx context.Context, tool string) (*toolgatetype.QuoteResult, error) {
	return c.QuoteWith(ctx, tool, toolgatetype.QuoteOptions{})
}

// QuoteWith is Quote with options, as toolgate.Gateway.QuoteWith takes
// them: with opts.Input, the input the call will carry, the
// organization's rules that read it are decided in the quote (a deny
// makes policy.callable false, naming the rule) rather than shown
// pending. The call is still decided on its own input.
func (c *Client) QuoteWith(ctx context.Context, tool string, opts toolgatetype.QuoteOptions) (*toolgatetype.QuoteResult, error) {
	seg, err := toolSegment(tool)
	if err != nil {
		return nil, err
	}
	r := request{method: http.MethodPost, path: "/v1/tools/" + seg + "/quote"}
	if opts.Input != nil {
		if !json.Valid(opts.Input) {
			return nil, &toolgatetype.Error{Code: toolgatetype.CodeInvalidRequest, Message: "input is not valid JSON"}
		}
		if r.body, err = json.Marshal(toolgatetype.QuoteBody{Input: opts.Input}); err != nil {
			return nil, fmt.Errorf("client: encode the quote: %w", err)
		}
	}
	return doJSON[toolgatetype.QuoteResult](ctx, c, r)
}

// Call runs one call of a tool under a quote, as toolgate.Gateway.Call
// does, exactly once: under req.IdempotencyKey, or a new random key when
// it is empty, returned in the result. See the package documentation for
// what is retried. A result the gateway had already produced for the key
// comes back with Replayed set.
//
// A *toolgatetype.Error is the gateway's answer: a refusal, after which
// nothing ran and nothing is charged, or internal_error. A
// *TransportError, or internal_error, leaves the outcome unknown: call
// again with the same key and request to learn it (TransportError carries
// the key).
func (c *Client) Call(ctx context.Context, req toolgatetype.CallRequest) (*toolgatetype.CallResult, error) {
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = toolgatetype.NewIdempotencyKey()
	}
	if err := toolgatetype.ValidateIdempotencyKey(req.IdempotencyKey); err != nil {
		return nil, err
	}
	seg, err := toolSegment(req.Tool)
	if err != nil {
		return nil, err
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return nil, &toolgatetype.Error{Code: toolgatetype.CodeInvalidRequest, Message: "input is not valid JSON"}
	}
	body, err := json.Marshal(toolgatetype.NewCallBody(req))
	if err != nil {
		return nil, fmt.Errorf("client: encode the call: %w", err)
	}
	r := request{method: http.MethodPost, path: "/v1/tools/" + seg + "/call", body: body, idempotencyKey: req.IdempotencyKey}
	a, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	res, err := c.callResult(r, a)
	if err != nil {
		return nil, err
	}
	res.IdempotencyKey = req.IdempotencyKey
	return res, nil
}

// GetExecution returns one of this principal's finished executions, as
// toolgate.Gateway.GetExecution does: the result exactly as stored.
func (c *Client) GetExecution(ctx context.Context, id string) (*toolgatetype.CallResult, error) {
	if id == "" {
		return nil, &toolgatetype.Error{Code: toolgatetype.CodeExecutionNotFound, Message: `no execution "" exists for this caller`}
	}
	r := request{method: http.MethodGet, path: "/v1/executions/" + url.PathEscape(id)}
	a, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return c.callResult(r, a)
}

// ResolveExecution records, for a client holding an approver key, a
// person's finding about an ambiguous execution of one of the approver's
// principals, as toolgate.Gateway.ResolveExecution does: completed charges
// it, failed releases its reserved amount. It returns the resolved
// execution, which a replay of the call's key returns from then on.
//
// A resolution is final: a second one gets execution_already_resolved, one
// of an execution that is not ambiguous execution_not_ambiguous, and a
// caller key approver_required. It is sent again only when the connection
// was refused; after a lost answer, read the execution to learn whether
// it was resolved.
func (c *Client) ResolveExecution(ctx context.Context, id string, r toolgatetype.ResolveRequest) (*toolgatetype.CallResult, error) {
	switch id {
	case "", ".", "..":
		return nil, &toolgatetype.Error{Code: toolgatetype.CodeExecutionNotFound, Message: fmt.Sprintf("no execution %q exists for you", id)}
	}
	body, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("client: encode the resolution: %w", err)
	}
	req := request{method: http.MethodPost, path: "/v1/executions/" + url.PathEscape(id) + "/resolve", body: body}
	a, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	return c.callResult(req, a)
}

// callResult reads an execution answer: the stored result's bytes as they
// are, and whether they were replayed.
func (c *Client) callResult(r request, a answer) (*toolgatetype.CallResult, error) {
	res := &toolgatetype.CallResult{Body: a.body, Replayed: a.header.Get("Idempotent-Replayed") == "true"}
	if err := c.decode(r, a, &res.Execution); err != nil {
		return nil, err
	}
	return res, nil
}

// toolSegment is a tool's slug or id as a path segment. An empty one would
// name another route, so it is refused here as the gateway refuses it.
func toolSegment(tool string) (string, error) {
	if tool == "" {
		return "", &toolgatetype.Error{Code: toolgatetype.CodeToolNotFound, Message: `no tool "" is registered`}
	}
	return url.PathEscape(tool), nil
}
