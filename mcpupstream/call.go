package mcpupstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/redact"
	"github.com/toolgate/toolgate/registry"
)

// invoker is the registry's Invoke of the upstream tool name, served as
// slug.
func (s *server) invoker(name, slug string) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, input json.RawMessage) (any, error) {
		return s.call(ctx, name, slug, input)
	}
}

// attempt is how one try of a call ended, when it did not end in an answer.
type attempt int

const (
	answered attempt = iota // the upstream answered: a result, or an error of its own
	notSent                 // the request provably never reached the upstream
	unsent                  // ... because the connection had ended: a fresh one may take it
	sent                    // the request may have reached it, and no answer came
)

// call sends one tools/call of name to the upstream, under CallTimeout and
// the caller's deadline. It is sent a second time only where it cannot run
// twice: when the first provably never reached the upstream (the session
// had ended, or the upstream had forgotten it), or when the tool is
// retry-safe (registry.Version.RetrySafe) and the first may have reached
// it; each time on a fresh connection (for HTTP, a fresh request of the
// session while it lasts). A request of a tool that is not
// retry-safe that may have reached the upstream without an answer is an
// *registry.UpstreamError whose Sent is true: the gateway records the call
// ambiguous.
func (s *server) call(ctx context.Context, name, slug string, input json.RawMessage) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	provider := providerName(&s.cfg)
	s.mu.Lock()
	c, secrets := s.conn, s.secrets
	s.mu.Unlock()
	if c == nil {
		return nil, registry.Upstreamf(registry.CodeUpstreamUnavailable, "%s is not connected; the gateway is starting it again", provider)
	}
	out, how, err := s.try(ctx, c, secrets, name, input)
	switch {
	case how == answered:
		return out, err
	case how == notSent:
		if c.http {
			// A request that could not reach an HTTP server says the
			// session may be gone for good; the server is reached anew
			// (and shown down meanwhile), rather than when its event
			// stream gives up.
			go func() { _ = c.session.Close() }()
		}
		return nil, err
	case how == sent && !s.retrySafe(slug):
		return nil, err
	}
	// Once more, on a fresh connection: nothing ran, or running twice
	// does no harm. An HTTP session still alive is one: each request is an
	// HTTP request of its own. Any other connection is replaced first.
	if how == unsent || !c.http || c.isEnded() {
		if c, secrets = s.fresh(ctx, c); c == nil {
			return nil, err
		}
	}
	s.log.InfoContext(ctx, "sending a call again on a fresh connection", "tool", slug, "retrySafe", how == sent)
	out, _, err = s.try(ctx, c, secrets, name, input)
	return out, err
}

// try sends the call once on c.
func (s *server) try(ctx context.Context, c *conn, secrets *redact.Secrets, name string, input json.RawMessage) (json.RawMessage, attempt, error) {
	provider := providerName(&s.cfg)
	if c.isEnded() {
		return nil, unsent, registry.Upstreamf(registry.CodeUpstreamUnavailable, "%s is not connected; the gateway is starting it again", provider)
	}
	left := new(atomic.Bool)
	ctx = context.WithValue(ctx, sentKey{}, left)
	if c.http {
		// The request may reach the server once it is written to a
		// connection to it.
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(w httptrace.WroteRequestInfo) {
			if w.Err == nil {
				left.Store(true)
			}
		}})
	}
	// Servers speaking MCP 2026-07-28 or later take the log level with each
	// request: their log messages go to the gateway's log.
	meta := mcp.Meta{mcp.MetaKeyLogLevel: "info"}
	res, err := c.session.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: name, Arguments: input})
	if err == nil {
		out, err := outputOf(res, provider, secrets)
		return out, answered, err
	}
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc) && !localCode(rpc.Code):
		msg := provider + " refused the call"
		if reason := excerpt(secrets, rpc.Message); reason != "" {
			msg += "; provider message: " + reason
		}
		return nil, answered, &registry.UpstreamError{Code: registry.CodeUpstreamError, Message: msg}
	case errors.Is(err, mcp.ErrSessionMissing):
		// The server had forgotten the session: it ran nothing.
		return nil, unsent, registry.Upstreamf(registry.CodeUpstreamUnavailable, "%s had ended the session", provider)
	case !left.Load():
		how := notSent
		if c.isEnded() {
			how = unsent
		}
		return nil, how, registry.Upstreamf(registry.CodeUpstreamUnavailable, "%s could not be reached", provider)
	}
	ue := registry.Upstreamf(registry.CodeUpstreamUnavailable, "the connection to %s broke before it answered", provider)
	if ctx.Err() != nil {
		ue = registry.Upstreamf(registry.CodeUpstreamUnavailable, "%s did not answer in time", provider)
	}
	ue.Sent = true
	return nil, sent, ue
}

// fresh waits, until ctx is done, for a connection other than old; nil
// when none came.
func (s *server) fresh(ctx context.Context, old *conn) (*conn, *redact.Secrets) {
	for {
		s.mu.Lock()
		c, secrets, changed := s.conn, s.secrets, s.changed
		s.mu.Unlock()
		if c != nil && c != old && !c.isEnded() {
			return c, secrets
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, nil
		}
	}
}

// retrySafe is the registry's word on whether a call of slug may be sent
// again: its capabilities, or the operator's trust.
func (s *server) retrySafe(slug string) bool {
	v, err := s.reg.Lookup(slug)
	return err == nil && v.RetrySafe()
}

// localCode reports whether a JSON-RPC error code is one the SDK gives a
// request itself, no server involved: the connection closing (-32003,
// -32004), or the transport refusing to send it (-32005). Whether such a
// request left is for the connection to say.
func localCode(code int64) bool { return code == -32003 || code == -32004 || code == -32005 }
