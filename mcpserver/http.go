package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/httpapi"
)

// Handler serves a gateway over MCP's streamable HTTP transport, mounted at
// any path of any mux. Every HTTP request must carry a caller's key
// (Authorization: Bearer <key>); its principal is who calls, and a session
// begun by one principal answers no other (403).
type Handler struct {
	g      *gateway
	auth   apikey.Authenticator
	tokens apikey.TokenVerifier // nil: API keys only
	limit  *authlimit.Limiter
	sdk    http.Handler
	// closing ends, when Close is called, what would otherwise keep an
	// http.Server's Shutdown waiting: the clients' standalone event streams
	// and approvals still waiting for a person.
	closing context.Context
	close   context.CancelFunc
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the streamable HTTP handler of gw. opts may be nil,
// though without an Authenticator every request is refused.
func NewHandler(gw *toolgate.Gateway, opts *Options) (*Handler, error) {
	g, err := newGateway(gw, "", opts)
	if err != nil {
		return nil, err
	}
	h := &Handler{g: g, auth: g.opts.Authenticator, tokens: g.opts.Tokens, limit: g.opts.AuthLimit}
	if h.limit == nil {
		h.limit = authlimit.Default()
	}
	h.closing, h.close = context.WithCancel(context.Background())
	g.closing = h.closing
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return g.mcp }, &mcp.StreamableHTTPOptions{
		Logger:              g.log,
		SessionTimeout:      g.opts.SessionTimeout,
		MaxRequestBodyBytes: g.opts.MaxBodyBytes,
		// Every request needs a caller's key, which a page that rebinds a
		// name to 127.0.0.1 cannot have; the check would only refuse
		// reverse proxies in front of a loopback listener.
		DisableLocalhostProtection: true,
	})
	// The SDK binds each session to the principal that began it
	// (TokenInfo.UserID) and refuses any other with 403. The key was
	// checked already; the verifier hands its principal on, with the
	// address the request came in at, for the links a call's answer gives.
	h.sdk = auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		principal, ok := ctx.Value(principalKey{}).(string)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		extra := map[string]any{extraBaseURL: httpapi.BaseURL(r)}
		if g.spans != nil {
			extra[extraSpanContext] = trace.SpanContextFromContext(ctx)
		}
		return &auth.TokenInfo{UserID: principal, Extra: extra}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
	return h, nil
}

type principalKey struct{}

// ServeHTTP authenticates the request, caps its body, marks each tools/call
// with its session and request id, and hands it to the SDK.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	principal, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	ctx := context.WithValue(r.Context(), principalKey{}, principal)
	if h.g.spans != nil && !trace.SpanContextFromContext(ctx).IsValid() && r.Header.Get("Traceparent") != "" {
		// The caller's trace continues in the spans of the messages this
		// request carries, unless a tracing middleware already began a
		// span for the request, which is their parent then.
		ctx = tracePropagation.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	rc := http.NewResponseController(w)
	switch r.Method {
	case http.MethodPost:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.g.opts.MaxBodyBytes))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeRPCError(w, http.StatusRequestEntityTooLarge, "the request body is larger than "+strconv.FormatInt(h.g.opts.MaxBodyBytes, 10)+" bytes")
			return
		case err != nil:
			writeRPCError(w, http.StatusBadRequest, "the request body could not be read")
			return
		}
		body = keyHTTPBody(body, r.Header.Get("Mcp-Session-Id"))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		// An answer may wait for a person's approval, longer than the
		// server's write timeout would allow.
		_ = rc.SetWriteDeadline(time.Now().Add(h.g.opts.ApprovalTimeout + time.Minute))
	case http.MethodGet:
		// The client's standalone event stream lasts as long as its session;
		// Close ends it.
		_ = rc.SetWriteDeadline(time.Time{})
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(h.closing, cancel)
		defer stop()
	}
	h.sdk.ServeHTTP(w, r.WithContext(ctx))
}

// Close ends the clients' standalone event streams and the approvals still
// waiting for an answer, so that an http.Server's Shutdown can finish: call
// it from Server.RegisterOnShutdown. Calls already admitted run to their
// end and are answered.
func (h *Handler) Close() {
	h.close()
	h.g.stopWatching()
}

// authenticate returns the principal of the request's Bearer key or
// access token, or answers the refusal itself. A missing, repeated,
// malformed or unknown key all fail alike.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	if token, ok := h.accessToken(r); ok {
		return h.verifyToken(w, r, token)
	}
	var key, principal string
	ok := false
	if h.auth != nil {
		if key, ok = apikey.BearerToken(r); ok {
			principal, ok = h.auth.Authenticate(r.Context(), key)
		}
	}
	if h.limited(w, r, key, ok) {
		return "", false
	}
	if ok {
		return principal, true
	}
	w.Header().Set("WWW-Authenticate", h.challenge(r))
	msg := "a valid API key is required: Authorization: Bearer <API_KEY>"
	if h.tokens != nil {
		msg = "a valid API key or access token is required: Authorization: Bearer <API_KEY or ACCESS_TOKEN>"
	}
	writeRPCError(w, http.StatusUnauthorized, msg)
	return "", false
}

// limited answers a request whose client address or key prefix failed too
// often with 429 and Retry-After, and reports whether it did; the
// credential's own check decided ok. It is asked before the credential's
// own answer is given, so that a refusal tells a guesser nothing.
func (h *Handler) limited(w http.ResponseWriter, r *http.Request, credential string, ok bool) bool {
	wait, err := h.limit.Check(r.Context(), r, authlimit.SurfaceMCP, credential, ok)
	switch {
	case err != nil:
		h.g.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "error", err)
		writeRPCError(w, http.StatusInternalServerError, "the gateway could not complete the request")
	case wait > 0:
		refusal := authlimit.Refusal(wait)
		w.Header().Set("Retry-After", strconv.Itoa(int(refusal.RetryAfter/time.Second)))
		writeRPCError(w, http.StatusTooManyRequests, refusal.Message)
	default:
		return false
	}
	return true
}

// writeRPCError answers an HTTP request the transport never saw with a
// JSON-RPC error body, which MCP clients read from non-2xx answers.
func writeRPCError(w http.ResponseWriter, status int, message string) {
	body, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
