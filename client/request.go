package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/toolgate/toolgate/internal/retryafter"
	"github.com/toolgate/toolgate/toolgatetype"
)

// maxAnswerBytes caps what is read of an answer: a page of registry
// entries with their schemas, or a call's output, fits many times over.
const maxAnswerBytes = 32 << 20

// request is one request of the API, sent as many times as the retry
// policy says, each time with the same body and Idempotency-Key.
type request struct {
	method string
	path   string // escaped, from the API's root: /v1/tools/echo/call
	query  url.Values
	body   []byte // JSON; nil for none
	// idempotencyKey is sent as the Idempotency-Key header when set.
	idempotencyKey string
}

// answer is the gateway's successful answer to a request.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends r until it succeeds, fails in a way the retry policy does not
// retry, runs out of attempts, or the next wait would pass ctx's deadline.
// A failure is the gateway's *toolgatetype.Error or a *TransportError.
func (c *Client) do(ctx context.Context, r request) (answer, error) {
	for attempt := 0; ; attempt++ {
		req, err := c.newHTTPRequest(ctx, r)
		if err != nil {
			return answer{}, err
		}
		resp, a, err := c.send(req, r)
		if err == nil {
			return a, nil
		}
		var te *TransportError
		if errors.As(err, &te) {
			te.Attempts = attempt + 1
		}
		retry, stop := c.opts.CheckRetry(ctx, req, resp, err)
		switch {
		case stop != nil:
			return answer{}, stop
		case !retry || attempt+1 >= c.opts.MaxAttempts:
			return answer{}, err
		}
		wait := max(c.opts.Backoff(c.opts.RetryWaitMin, c.opts.RetryWaitMax, attempt, resp), retryAfterOf(err))
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			// Waiting would only end in the deadline; the caller learns now
			// what stood in the way, a rate limit's retry-after included.
			return answer{}, err
		}
		c.log.InfoContext(ctx, "retrying a request to the gateway",
			"method", r.method, "path", r.path, "attempt", attempt+2, "wait", wait, "after", describe(err))
		if done := c.sleep(ctx, wait); done != nil {
			return answer{}, fmt.Errorf("client: %s %s: stopped waiting to retry: %w; the last attempt: %w", r.method, r.path, done, err)
		}
	}
}

func (c *Client) newHTTPRequest(ctx context.Context, r request) (*http.Request, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.opts.UserAgent)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", r.idempotencyKey)
	}
	return req, nil
}

// send makes one attempt. The answer comes back whole or not at all: a
// body cut short is as much a lost answer as no answer.
func (c *Client) send(req *http.Request, r request) (*http.Response, answer, error) {
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, answer{}, c.transportError(r, 0, mayHaveReached(err), err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	resp.Body.Close()
	if err != nil {
		return nil, answer{}, c.transportError(r, 0, true, fmt.Errorf("the answer was cut short: %w", err))
	}
	if len(body) > maxAnswerBytes {
		return nil, answer{}, c.transportError(r, resp.StatusCode, true, fmt.Errorf("the answer is larger than %d bytes", maxAnswerBytes))
	}
	resp.Body = io.NopCloser(bytes.NewReader(body)) // for CheckRetry to read again
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, answer{status: resp.StatusCode, header: resp.Header, body: body}, nil
	}
	if ge, ok := toolgatetype.DecodeError(resp.Header, body); ok {
		return resp, answer{}, ge
	}
	te := c.transportError(r, resp.StatusCode, resp.StatusCode >= 500, errors.New(resp.Status))
	te.RetryAfter, _ = retryafter.Parse(resp.Header.Get("Retry-After"), time.Now())
	return resp, answer{}, te
}

func (c *Client) transportError(r request, status int, reached bool, err error) *TransportError {
	return &TransportError{
		Method: r.method, Path: r.path, StatusCode: status,
		MayHaveReachedServer: reached, IdempotencyKey: r.idempotencyKey, Err: err,
	}
}

// doJSON sends r and reads the gateway's answer into a new T.
func doJSON[T any](ctx context.Context, c *Client, r request) (*T, error) {
	a, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := c.decode(r, a, out); err != nil {
		return nil, err
	}
	return out, nil
}

// decode reads a successful answer into out. An answer that does not
// decode is not the gateway's: something in between answered, and the
// request may have reached the gateway.
func (c *Client) decode(r request, a answer, out any) error {
	if err := json.Unmarshal(a.body, out); err != nil {
		return c.notTheGateways(r, a.status, err)
	}
	return nil
}

// notTheGateways is a successful answer that does not read as the
// gateway's: something in between answered, and the request may have
// reached the gateway.
func (c *Client) notTheGateways(r request, status int, err error) *TransportError {
	return c.transportError(r, status, true, fmt.Errorf("the answer is not the gateway's: %w", err))
}

// describe names what a failed attempt came to, for the log.
func describe(err error) string {
	var ge *toolgatetype.Error
	if errors.As(err, &ge) {
		return string(ge.Code)
	}
	return err.Error()
}
