package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Handler serves a gateway over MCP's streamable HTTP transport, mounted at
// any path of any mux. Every HTTP request must carry a caller's key
// (Authorization: Bearer <key>); its principal is who calls.
//
// Two revisions of the protocol are served side by side, as each request
// asks: 2026-07-28 statelessly, every request standing alone (any instance
// of a fleet answers any request, with no sessions to route by), and the
// revisions before it in sessions, which a client begins with initialize
// and which answer no principal but the one that began them (403).
//
// Before its key is looked at or its body read, a request is refused (403)
// when its Host, or its Origin if it gives one, names no name of the
// server's (Options.AllowedHosts). A JSON-RPC batch, which sessions of
// revision 2025-03-26 may send, holds at most 100 messages: a larger one is
// refused whole with 400 and a JSON-RPC Invalid Request error, wherever it
// is sent, and none of its messages is run.
type Handler struct {
	g      *gateway
	auth   apikey.Authenticator
	tokens apikey.TokenVerifier // nil: API keys only
	limit  *authlimit.Limiter
	hosts  hostPolicy
	// sessions serves protocol revisions before 2026-07-28, in sessions;
	// stateless serves 2026-07-28. Both are the SDK's, behind its Bearer
	// token check, over the one *mcp.Server.
	sessions  http.Handler
	stateless http.Handler
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
	h := &Handler{g: g, auth: g.opts.Authenticator, tokens: g.opts.Tokens, limit: g.opts.AuthLimit,
		hosts: newHostPolicy(g.opts.PublicURL, g.opts.AllowedHosts)}
	if h.limit == nil {
		h.limit = authlimit.Default()
	}
	h.closing, h.close = context.WithCancel(context.Background())
	g.closing = h.closing
	server := func(*http.Request) *mcp.Server { return g.mcp }
	// The SDK binds each session to the principal that began it
	// (TokenInfo.UserID) and refuses any other with 403. The key was
	// checked already; the verifier hands its principal on, with the
	// address the request came in at, for the links a call's answer gives.
	bearer := auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		principal, ok := ctx.Value(principalKey{}).(string)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		extra := map[string]any{extraBaseURL: httpx.BaseURL(r)}
		if claims, ok := ctx.Value(claimsKey{}).(*tokenClaims); ok {
			extra[extraTokenClaims] = claims
		}
		if token, ok := ctx.Value(callerTokenKey{}).(callerToken); ok {
			extra[extraCallerToken] = token
		}
		if g.spans != nil {
			extra[extraSpanContext] = trace.SpanContextFromContext(ctx)
		}
		return &auth.TokenInfo{UserID: principal, Extra: extra}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	// ServeHTTP checks Host and Origin, more strictly than the SDK's
	// loopback check, which would also refuse the public name of a server
	// behind a reverse proxy on loopback.
	h.sessions = bearer(mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		// A client whose event stream breaks while its call waits (for a
		// person's approval, say) picks it up where it broke.
		EventStore:                 mcp.NewMemoryEventStore(nil),
		Logger:                     g.log,
		SessionTimeout:             g.opts.SessionTimeout,
		MaxRequestBodyBytes:        g.opts.MaxBodyBytes,
		DisableLocalhostProtection: true,
	}))
	h.stateless = bearer(mcp.NewStreamableHTTPHandler(server, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		Logger:                     g.log,
		MaxRequestBodyBytes:        g.opts.MaxBodyBytes,
		DisableLocalhostProtection: true,
	}))
	return h, nil
}

type principalKey struct{}

// ServeHTTP checks the request's Host and Origin, authenticates it, caps
// its body and the messages of a batch (maxBatchMessages), marks each
// tools/call with its session and request id, and hands it to the SDK's
// handler for the protocol revision it speaks.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if why := h.hosts.refusal(r); why != "" {
		writeRPCError(w, http.StatusForbidden, why)
		return
	}
	principal, claims, ok := h.authenticate(w, r)
	if !ok {
		return
	}
	ctx := context.WithValue(r.Context(), principalKey{}, principal)
	if claims != nil {
		ctx = context.WithValue(ctx, claimsKey{}, claims)
	}
	if token, isToken := h.accessToken(r); isToken {
		// Authenticated as a token, it is the caller's identity a tool's
		// provider may be sent in exchange (tokenexchange).
		ctx = context.WithValue(ctx, callerTokenKey{}, callerToken(token))
	}
	if h.g.spans != nil && !trace.SpanContextFromContext(ctx).IsValid() && r.Header.Get("Traceparent") != "" {
		// The caller's trace continues in the spans of the messages this
		// request carries, unless a tracing middleware already began a
		// span for the request, which is their parent then.
		ctx = tracePropagation.Extract(ctx, propagation.HeaderCarrier(r.Header))
	}
	rc := http.NewResponseController(w)
	stateless := statelessVersion(r.Header)
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
		head := headOf(body)
		session := r.Header.Get("Mcp-Session-Id")
		if session == "" && (head.perRequestVersion || head.method == "server/discover") {
			// No session, and the request says its revision itself: the
			// stateless handler answers it, if only to say what is missing.
			stateless = true
		}
		if stateless {
			session = "" // a request of its own, in no session
		}
		if body, err = keyHTTPRequest(body, session); err != nil {
			// As the transport refuses a body it cannot take: 400, with a
			// JSON-RPC error (Invalid Request, no id) in the body. Nothing
			// in the batch has run: the SDK never sees it.
			writeRPCError(w, http.StatusBadRequest, err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		if head.method == "subscriptions/listen" {
			// A listen stream lasts until the client ends it; Close ends it
			// too.
			var stop func()
			ctx, stop = h.untilClosed(ctx, rc)
			defer stop()
			break
		}
		// An answer may wait for a person's approval, longer than the
		// server's write timeout would allow.
		_ = rc.SetWriteDeadline(time.Now().Add(h.g.opts.ApprovalTimeout + time.Minute))
	case http.MethodGet:
		// The client's standalone event stream lasts as long as its session;
		// Close ends it.
		var stop func()
		ctx, stop = h.untilClosed(ctx, rc)
		defer stop()
	}
	if stateless {
		h.stateless.ServeHTTP(w, r.WithContext(ctx))
		return
	}
	h.sessions.ServeHTTP(w, r.WithContext(ctx))
}

// untilClosed is the context of a stream that lasts until the client ends
// it or Close is called, with no write deadline; stop releases it.
func (h *Handler) untilClosed(ctx context.Context, rc *http.ResponseController) (_ context.Context, stop func()) {
	_ = rc.SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(h.closing, cancel)
	return ctx, func() {
		unhook()
		cancel()
	}
}

// statelessVersion reports whether a request's MCP-Protocol-Version header
// names 2026-07-28 or later, which the stateless handler answers (and
// refuses, with the versions it serves, when it names one unknown).
// Protocol versions are dates, so they order as strings.
func statelessVersion(h http.Header) bool {
	v := h.Get("Mcp-Protocol-Version")
	return v != "" && v >= multiRoundTripVersion
}

// bodyHead is what routing needs to know of a request body: its method,
// and whether it names its protocol revision in _meta, as requests of
// 2026-07-28 do. A batch, which that revision does not allow, has neither.
type bodyHead struct {
	method            string
	perRequestVersion bool
}

func headOf(body []byte) bodyHead {
	// Members by their exact names, as the SDK reads them: a struct would
	// take "Method" or "_META" too, whatever their case.
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return bodyHead{}
	}
	var method string
	if raw, ok := msg["method"]; ok && json.Unmarshal(raw, &method) != nil {
		return bodyHead{}
	}
	var params map[string]json.RawMessage
	var meta map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) == nil {
		_ = json.Unmarshal(params["_meta"], &meta)
	}
	_, versioned := meta[mcp.MetaKeyProtocolVersion]
	return bodyHead{method: method, perRequestVersion: versioned}
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
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (string, *tokenClaims, bool) {
	if token, ok := h.accessToken(r); ok {
		return h.verifyToken(w, r, token)
	}
	principal, ok := h.authenticateKey(w, r)
	return principal, nil, ok
}

// authenticateKey is authenticate for a request with an API key.
func (h *Handler) authenticateKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	var key, principal string
	ok := false
	if h.auth != nil {
		if key, ok = apikey.BearerToken(r); ok {
			principal, ok = h.auth.Authenticate(r.Context(), key)
			if !ok {
				if _, isApprover := apikey.ApproversOf(h.auth).AuthenticateApprover(r.Context(), key); isApprover {
					// A right key of the wrong kind: said so, as the HTTP
					// API says it, rather than "invalid key".
					if !h.limited(w, r, key, true) {
						writeRPCError(w, http.StatusUnauthorized, string(toolgatetype.CodeCallerKeyRequired)+": this route needs a caller's API key; an approver key was given")
					}
					return "", false
				}
			}
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
// often with 429 and Retry-After, naming which, and reports whether it
// did (a right key is never refused for its prefix alone); the
// credential's own check decided ok. It is asked before the credential's
// own answer is given, so that a refusal tells a guesser nothing.
func (h *Handler) limited(w http.ResponseWriter, r *http.Request, credential string, ok bool) bool {
	v, err := h.limit.Check(r.Context(), r, authlimit.SurfaceMCP, credential, ok)
	switch {
	case err != nil:
		h.g.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "error", err)
		writeRPCError(w, http.StatusInternalServerError, "the gateway could not complete the request")
	case v.Limited():
		refusal := authlimit.Refusal(v)
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
