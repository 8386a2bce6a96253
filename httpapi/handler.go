// Package httpapi serves a toolgate.Gateway's JSON API over HTTP: quote and
// call, the caller's executions (one, or the audit trail a page at a time)
// and spend, its chain of signed receipts, spend controls and standing
// approvals, approval requests, the budgets an approver oversees and their
// spend, and the public registry and receipt keys
// (GET /.well-known/toolgate-receipt-keys, under the prefix the API is
// mounted at). The registry needs no key; a request that sends a caller's
// key or access token gets it as that caller sees it, without the tools
// the organization's rules hide from it.
//
// The API's answers link to pages it does not serve itself: an approval
// request's approveUrl to the approval page (package approvalpage), a
// registry entry to its tool's documentation (package tooldocs). Package
// toolgatehttp serves all three on one handler, which is what most
// embedders want; NewHandler is the API alone, for a server that serves the
// pages elsewhere or not at all.
//
// NewHandler returns a plain http.Handler built on the standard library's
// router, so it mounts on any net/http server, under any prefix:
//
//	mux.Handle("/gateway/", http.StripPrefix("/gateway", httpapi.NewHandler(gw, opts)))
//
// The absolute links of its answers are built from the request: its Host,
// https when the connection is TLS or X-Forwarded-Proto says so, and the
// prefix http.StripPrefix removed, or X-Forwarded-Prefix from a proxy that
// strips it itself.
//
// Request bodies are read strictly: member names match exactly ("quoteID"
// is not "quoteId"), a member the body does not have is refused, and so is
// a member that appears twice in its object, at any depth (a call's input
// included), each a 400 invalid_request naming the member by its path
// ("input.items[0].id"). Nothing is taken as its last copy, so a body means
// the same to the gateway as to any proxy or log that read it first.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/internal/textcheck"
	"github.com/toolgate/toolgate/toolgatetype"
)

// DefaultMaxBodyBytes caps request bodies (1 MiB).
const DefaultMaxBodyBytes = httpx.DefaultMaxBodyBytes

// Options configure a handler. A nil *Options means the defaults.
type Options struct {
	// Authenticator maps API keys to principals. Nil refuses every key,
	// which leaves only the public registry reachable.
	Authenticator apikey.Authenticator
	// Approvers maps approver keys to approvers, the people who decide
	// approval requests. Nil means the Authenticator when it is one too, as
	// an apikey.KeyStore is; otherwise no approver key is accepted. A key
	// either authenticates as a caller, and is refused on the approvers'
	// routes, or not, and is then refused on the callers'.
	Approvers apikey.ApproverAuthenticator
	// Tokens verifies OAuth access tokens, accepted beside API keys on the
	// callers' and the approvers' routes (package oauth); nil accepts API
	// keys only. With it, every 401 names the resource metadata a client
	// signs in by.
	Tokens apikey.TokenVerifier
	// AuthLimit slows the guessing of keys: a client address whose keys
	// failed too often is answered 429 rate_limited, with Retry-After,
	// until its window ends, whatever key it sends; a key prefix that
	// failed too often, every wrong key with it, but never the right key
	// from an address that has not failed. The 429 names the limit. Nil
	// means a Limiter with the defaults, counting in this process's
	// memory; share one Limiter between handlers to count their failures
	// together.
	AuthLimit *authlimit.Limiter
	// MaxBodyBytes caps request bodies; 0 means 1 MiB.
	MaxBodyBytes int64
	// ExposeUsageCounts shows exact usage counts in registry entries next to
	// the coarse labels.
	ExposeUsageCounts bool
	// Logger receives request errors; nil discards them. API keys are never logged.
	Logger *slog.Logger
	// TracePropagator reads the trace a request continues from its
	// headers; nil means W3C Trace Context (traceparent).
	TracePropagator propagation.TextMapPropagator
}

// Handler serves the JSON API of a gateway.
type Handler struct {
	gw        *toolgate.Gateway
	auth      apikey.Authenticator
	approvers apikey.ApproverAuthenticator
	tokens    apikey.TokenVerifier // nil: API keys only
	limit     *authlimit.Limiter
	opts      Options
	log       *slog.Logger
	mux       *http.ServeMux
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the JSON API of gw.
func NewHandler(gw *toolgate.Gateway, opts *Options) *Handler {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.TracePropagator == nil {
		o.TracePropagator = propagation.TraceContext{}
	}
	if o.Authenticator == nil {
		o.Authenticator = apikey.NewKeyStore()
	}
	if o.Approvers == nil {
		o.Approvers = apikey.ApproversOf(o.Authenticator)
	}
	if o.AuthLimit == nil {
		o.AuthLimit = authlimit.Default()
	}
	h := &Handler{gw: gw, auth: o.Authenticator, approvers: o.Approvers, tokens: o.Tokens, limit: o.AuthLimit, opts: o, log: o.Logger, mux: http.NewServeMux()}
	h.Register(h.mux)
	h.mux.Handle("/", httpx.NotFound(h.log))
	return h
}

// Register adds the API's routes to mux, so that the API can share a mux
// with other handlers under the same prefix: each of its paths answers
// 405, with the API's JSON error, to the methods it does not take, and
// mux's "/" is left to the caller. Package toolgatehttp mounts the API,
// the approval pages and the documentation together this way.
func (h *Handler) Register(mux *http.ServeMux) {
	r := httpx.NewRouter(mux, h.log)
	m := func(pattern string, next http.HandlerFunc) {
		r.Handle(pattern, h.continueTrace(h.pathText(pattern, next)))
	}
	// The call flow, for authenticated callers.
	m("POST /v1/tools/{tool}/quote", h.authed(h.quote))
	m("POST /v1/tools/{tool}/call", h.authed(h.call))
	m("GET /v1/executions/{id}", h.authed(h.execution))
	// An approver resolves an execution whose outcome is unknown.
	m("POST /v1/executions/{id}/resolve", h.approverAuthed("only an approver resolves a call whose outcome is unknown", h.resolveExecution))
	// The audit trail: a caller's own, or an approver's principals'.
	m("GET /v1/executions", h.eitherAuthed(h.listExecutions))
	m("GET /v1/spend", h.eitherAuthed(h.spend))
	// Receipts: a caller's own chain, or, with an approver key and
	// ?principal=ID, that of a principal the approver approves for; and
	// the public keys anyone verifies them with.
	m("GET "+ReceiptsPath, h.eitherAuthed(h.listReceipts))
	m("GET "+ReceiptKeysPath, h.receiptKeys)

	// A caller's own settings.
	m("GET /v1/spend-controls", h.authed(h.getSpendControls))
	m("PUT /v1/spend-controls", h.authed(h.putSpendControls))
	m("GET /v1/spend-controls/tools/{tool}", h.authed(h.getToolSpendControls))
	m("PUT /v1/spend-controls/tools/{tool}", h.authed(h.putToolSpendControls))
	m("DELETE /v1/spend-controls/tools/{tool}", h.authed(h.deleteToolSpendControls))
	// Standing approvals: a caller's own, or, with an approver key and
	// ?principal=ID, those of a principal the approver approves for.
	m("GET /v1/approvals", h.eitherAuthed(h.listApprovals))
	m("PUT /v1/approvals/{tool}", h.eitherAuthed(h.putApproval))
	m("DELETE /v1/approvals/{tool}", h.eitherAuthed(h.deleteApproval))

	// Budgets: an approver sees those it oversees, and what they spent.
	m("GET "+BudgetsPath, h.approverAuthed("it lists the budgets an approver oversees", h.listBudgets))
	m("GET "+BudgetsPath+"/{id}/spend", h.approverAuthed("a budget's spend is shown to the approvers it names", h.budgetSpend))

	// Approval requests: callers ask, approvers decide.
	m("POST "+httpx.ApprovalRequestsPath, h.authed(h.createApprovalRequest))
	m("GET "+httpx.ApprovalRequestsPath, h.approverAuthed("it lists the requests waiting for an approver", h.listApprovalRequests))
	m("GET "+httpx.ApprovalRequestsPath+"/{id}", h.eitherAuthed(h.getApprovalRequest))
	m("POST "+httpx.ApprovalRequestsPath+"/{id}/approve", h.approverAuthed("a caller cannot approve its own calls", h.approveRequest))
	m("POST "+httpx.ApprovalRequestsPath+"/{id}/deny", h.approverAuthed("approval requests are decided by approvers", h.denyRequest))

	// The public registry, as a caller sees it when it says who it is.
	m("GET /v1/registry/tools", h.optionallyAuthed(h.listTools))
	m("GET /v1/registry/tools/{tool}", h.optionallyAuthed(h.toolEntry))
	m("GET /healthz", h.healthz)
	r.RefuseOtherMethods()
}

// ServeHTTP serves the API. A request that carries a W3C traceparent
// continues that trace: the gateway's spans for it are its children. Where
// a tracing middleware already began a span for the request, that span is
// the parent instead.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// continueTrace makes each route, however it is mounted, continue the
// trace its request carries.
func (h *Handler) continueTrace(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		next(w, httpx.ContinueTrace(r, h.opts.TracePropagator))
	}
}

// pathText refuses a request whose path names, in a wildcard of pattern
// ({id}, {tool}), text no store can keep: 400 invalid_request naming the
// wildcard, before anything looks it up.
func (h *Handler) pathText(pattern string, next http.HandlerFunc) http.HandlerFunc {
	var names []string
	for rest := pattern; ; {
		_, after, ok := strings.Cut(rest, "{")
		if !ok {
			break
		}
		name, tail, _ := strings.Cut(after, "}")
		names = append(names, strings.TrimSuffix(name, "..."))
		rest = tail
	}
	if len(names) == 0 {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		for _, name := range names {
			if p := textcheck.Problem(r.PathValue(name)); p != "" {
				h.writeError(w, r, paramError(name, "the path's %s %s", name, p))
				return
			}
		}
		next(w, r)
	}
}

// writeError answers with err; see httpx.WriteError.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	// The server's log line for the request names who was refused.
	if who := principalOf(r); who != "" {
		httpx.NoteWho(r, who)
	} else {
		httpx.NoteWho(r, approverOf(r))
	}
	// With access tokens accepted, every 401 says where to get one.
	var te *toolgatetype.Error
	if h.tokens != nil && errors.As(err, &te) && te.Code == toolgatetype.CodeUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		w.Header().Set("WWW-Authenticate", h.tokenChallenge(r))
	}
	httpx.WriteError(w, r, h.log, err)
}

type principalKey struct{}

// authed requires a caller's API key, or access token, and puts its
// principal in the context. A missing, malformed and unknown key all get
// the same answer; a valid approver key is told that the route is a
// caller's (caller_key_required), so that a person who pasted the wrong
// key knows which one to use.
func (h *Handler) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if token, ok := httpx.AccessToken(r, h.tokens); ok {
			h.serveToken(w, r, token, needCaller, next)
			return
		}
		key, ok := apikey.BearerToken(r)
		var principal string
		if ok {
			principal, ok = h.auth.Authenticate(r.Context(), key)
			if !ok {
				if _, isApprover := h.approvers.AuthenticateApprover(r.Context(), key); isApprover {
					if !h.limited(w, r, key, true) {
						h.writeError(w, r, httpx.Errorf(toolgatetype.CodeCallerKeyRequired, "this route needs a caller's API key; an approver key was given"))
					}
					return
				}
			}
		}
		if h.limited(w, r, key, ok) {
			return
		}
		if !ok {
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeUnauthorized, "a valid API key is required: Authorization: Bearer <API_KEY>"))
			return
		}
		next(w, withPrincipal(r, principal))
	}
}

func withPrincipal(r *http.Request, principal string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, principal))
}

func withApprover(r *http.Request, approver string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), approverCtxKey{}, approver))
}

// limited answers a request whose client address or key prefix failed too
// often with 429, naming which, and reports whether it did; the key's own
// check decided ok (a right key is never refused for its prefix alone, see
// authlimit). It must be asked before the check's outcome is answered, so
// that a guesser learns nothing from a refusal.
func (h *Handler) limited(w http.ResponseWriter, r *http.Request, key string, ok bool) bool {
	v, err := h.limit.Check(r.Context(), r, authlimit.SurfaceAPI, key, ok)
	switch {
	case err != nil:
		h.writeError(w, r, err)
	case v.Limited():
		h.writeError(w, r, authlimit.Refusal(v))
	default:
		return false
	}
	return true
}

func principalOf(r *http.Request) string {
	p, _ := r.Context().Value(principalKey{}).(string)
	return p
}

type approverCtxKey struct{}

// approverOf is the approver a request authenticated as; "" for a caller.
func approverOf(r *http.Request) string {
	a, _ := r.Context().Value(approverCtxKey{}).(string)
	return a
}

// approverAuthed requires an approver key, or an access token that makes
// an approver, and puts its approver in the context. A caller key is
// authenticated, and refused with a sentence that says the route needs an
// approver key, and why (approver_required); anything else is
// unauthorized.
func (h *Handler) approverAuthed(why string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if token, ok := httpx.AccessToken(r, h.tokens); ok {
			h.serveToken(w, r, token, needApprover, next)
			return
		}
		key, ok := apikey.BearerToken(r)
		var approver string
		isCaller := false
		if ok {
			_, isCaller = h.auth.Authenticate(r.Context(), key)
			if !isCaller {
				approver, ok = h.approvers.AuthenticateApprover(r.Context(), key)
			}
		}
		if h.limited(w, r, key, ok) {
			return
		}
		switch {
		case isCaller:
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeApproverRequired, "this route needs an approver key: %s; a caller's API key was given", why))
		case ok:
			next(w, r.WithContext(context.WithValue(r.Context(), approverCtxKey{}, approver)))
		default:
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeUnauthorized, "a valid approver key is required: Authorization: Bearer <APPROVER_KEY>"))
		}
	}
}

// eitherAuthed accepts a caller key, putting its principal in the context,
// or else an approver key, putting its approver there; an access token
// likewise, as a caller when it may call.
func (h *Handler) eitherAuthed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if token, ok := httpx.AccessToken(r, h.tokens); ok {
			h.serveToken(w, r, token, needEither, next)
			return
		}
		key, ok := apikey.BearerToken(r)
		var principal, approver string
		if ok {
			if principal, ok = h.auth.Authenticate(r.Context(), key); !ok {
				approver, ok = h.approvers.AuthenticateApprover(r.Context(), key)
			}
		}
		if h.limited(w, r, key, ok) {
			return
		}
		switch {
		case principal != "":
			next(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, principal)))
		case ok:
			next(w, r.WithContext(context.WithValue(r.Context(), approverCtxKey{}, approver)))
		default:
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeUnauthorized, "a valid API key is required: Authorization: Bearer <API_KEY>"))
		}
	}
}

func (h *Handler) healthz(w http.ResponseWriter, _ *http.Request) {
	httpx.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
