// Package httpapi serves a toolgate.Gateway over HTTP: quote and call, the
// caller's executions (one, or the audit trail a page at a time) and spend,
// spend controls and standing approvals, approval requests with the page
// where people decide them, and the public registry with each tool's
// documentation (JSON record, OpenAPI 3.1, llms.txt and an HTML page).
//
// NewHandler returns a plain http.Handler built on the standard library's
// router, so it mounts on any net/http server, under any prefix:
//
//	mux.Handle("/gateway/", http.StripPrefix("/gateway", httpapi.NewHandler(gw, opts)))
//
// The documentation's absolute links are built from the request: its Host,
// https when the connection is TLS or X-Forwarded-Proto says so, and the
// prefix http.StripPrefix removed, or X-Forwarded-Prefix from a proxy that
// strips it itself.
package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolgatetype"
)

// DefaultMaxBodyBytes caps request bodies (1 MiB).
const DefaultMaxBodyBytes = 1 << 20

// Options configure a handler. A nil *Options means the defaults.
type Options struct {
	// Authenticator maps API keys to principals. Nil refuses every key,
	// which leaves only the public registry and documentation reachable.
	Authenticator Authenticator
	// Approvers maps approver keys to approvers, the people who decide
	// approval requests (contract section 14). Nil means the Authenticator
	// when it is one too, as a KeyStore is; otherwise no approver key is
	// accepted. A key either authenticates as a caller, and is refused on
	// the approvers' routes, or not, and is then refused on the callers'.
	Approvers ApproverAuthenticator
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

type handler struct {
	gw        *toolgate.Gateway
	auth      Authenticator
	approvers ApproverAuthenticator
	sessions  *sessions
	opts      Options
	log       *slog.Logger
	mux       *http.ServeMux
}

// NewHandler returns the HTTP API of gw.
func NewHandler(gw *toolgate.Gateway, opts *Options) http.Handler {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.TracePropagator == nil {
		o.TracePropagator = propagation.TraceContext{}
	}
	auth := o.Authenticator
	if auth == nil {
		auth = NewKeyStore()
	}
	approvers := o.Approvers
	if approvers == nil {
		approvers, _ = auth.(ApproverAuthenticator)
	}
	if approvers == nil {
		approvers = NewKeyStore()
	}
	h := &handler{gw: gw, auth: auth, approvers: approvers, sessions: newSessions(gw.Clock()), opts: o, log: o.Logger, mux: http.NewServeMux()}
	h.routes()
	return h
}

func (h *handler) routes() {
	m := &router{mux: h.mux, methods: map[string][]string{}}
	// The call flow, for authenticated callers.
	m.handle("POST /v1/tools/{tool}/quote", h.authed(h.quote))
	m.handle("POST /v1/tools/{tool}/call", h.authed(h.call))
	m.handle("GET /v1/executions/{id}", h.authed(h.execution))
	// The audit trail: a caller's own, or an approver's principals'.
	m.handle("GET /v1/executions", h.eitherAuthed(h.listExecutions))
	m.handle("GET /v1/spend", h.eitherAuthed(h.spend))

	// A caller's own settings.
	m.handle("GET /v1/spend-controls", h.authed(h.getSpendControls))
	m.handle("PUT /v1/spend-controls", h.authed(h.putSpendControls))
	m.handle("GET /v1/spend-controls/tools/{tool}", h.authed(h.getToolSpendControls))
	m.handle("PUT /v1/spend-controls/tools/{tool}", h.authed(h.putToolSpendControls))
	m.handle("DELETE /v1/spend-controls/tools/{tool}", h.authed(h.deleteToolSpendControls))
	// Standing approvals: a caller's own, or, with an approver key and
	// ?principal=ID, those of a principal the approver approves for.
	m.handle("GET /v1/approvals", h.eitherAuthed(h.listApprovals))
	m.handle("PUT /v1/approvals/{tool}", h.eitherAuthed(h.putApproval))
	m.handle("DELETE /v1/approvals/{tool}", h.eitherAuthed(h.deleteApproval))

	// Approval requests (contract section 14): callers ask, approvers decide.
	m.handle("POST "+approvalRequestsPath, h.authed(h.createApprovalRequest))
	m.handle("GET "+approvalRequestsPath, h.approverAuthed(h.listApprovalRequests))
	m.handle("GET "+approvalRequestsPath+"/{id}", h.eitherAuthed(h.getApprovalRequest))
	m.handle("POST "+approvalRequestsPath+"/{id}/approve", h.approverAuthed(h.approveRequest))
	m.handle("POST "+approvalRequestsPath+"/{id}/deny", h.approverAuthed(h.denyRequest))
	// The approval page, for people: its own sign-in, sessions and forms.
	m.handle("GET "+approvalPagesPath, h.approvalListPage)
	m.handle("POST "+approvalPagesPath, h.approvalListForm)
	m.handle("GET "+approvalPagesPath+"/{id}", h.approvalPage)
	m.handle("POST "+approvalPagesPath+"/{id}", h.approvalPageForm)

	// The public registry and documentation.
	m.handle("GET /v1/registry/tools", h.listTools)
	m.handle("GET /v1/registry/tools/{tool}", h.toolEntry)
	m.handle("GET /v1/registry/manifest.schema.json", serveManifestSchema)
	h.docRoutes(m)
	m.handle("GET /healthz", h.healthz)
	m.fallbacks(h)
}

// router registers routes on a ServeMux and remembers each path's methods,
// so that wrong methods and unknown paths get the same JSON error body as
// everything else, from handlers of their own rather than by routing every
// request twice.
type router struct {
	mux     *http.ServeMux
	methods map[string][]string // by path pattern
}

func (m *router) handle(pattern string, h http.HandlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	m.mux.HandleFunc(pattern, h)
	m.methods[path] = append(m.methods[path], method)
}

// fallbacks answers 405 on every known path for the methods it lacks
// (a method-less pattern is less specific than the real routes, so it only
// sees what they do not take), and 404 everywhere else.
func (m *router) fallbacks(h *handler) {
	for path, methods := range m.methods {
		allow := append([]string(nil), methods...)
		for _, method := range methods {
			if method == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
		allowHeader := strings.Join(allow, ", ")
		m.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allowHeader)
			h.writeError(w, r, apiError(codeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		})
	}
	m.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.writeError(w, r, apiError(toolgatetype.CodeNotFound, "there is nothing at %s", r.URL.Path))
	})
}

// ServeHTTP serves the API. A request that carries a W3C traceparent
// continues that trace: the gateway's spans for it are its children. Where
// a tracing middleware already began a span for the request, that span is
// the parent instead.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() && r.Header.Get("Traceparent") != "" {
		r = r.WithContext(h.opts.TracePropagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
	}
	h.mux.ServeHTTP(w, r)
}

type principalKey struct{}

// authed requires a valid API key and puts its principal in the context.
// A missing, malformed and unknown key all get the same answer.
func (h *handler) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearerToken(r)
		var principal string
		if ok {
			principal, ok = h.auth.Authenticate(r.Context(), key)
		}
		if !ok {
			h.writeError(w, r, apiError(toolgatetype.CodeUnauthorized, "a valid API key is required: Authorization: Bearer <API_KEY>"))
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, principal)))
	}
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

// approverAuthed requires an approver key and puts its approver in the
// context. A caller key is authenticated, and refused as not an
// approver's (approver_required); anything else is unauthorized.
func (h *handler) approverAuthed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearerToken(r)
		if ok {
			if _, isCaller := h.auth.Authenticate(r.Context(), key); isCaller {
				h.writeError(w, r, apiError(toolgatetype.CodeApproverRequired, "only an approver key can do this; a caller key cannot approve"))
				return
			}
			var approver string
			if approver, ok = h.approvers.AuthenticateApprover(r.Context(), key); ok {
				next(w, r.WithContext(context.WithValue(r.Context(), approverCtxKey{}, approver)))
				return
			}
		}
		h.writeError(w, r, apiError(toolgatetype.CodeUnauthorized, "a valid approver key is required: Authorization: Bearer <APPROVER_KEY>"))
	}
}

// eitherAuthed accepts a caller key, putting its principal in the context,
// or else an approver key, putting its approver there.
func (h *handler) eitherAuthed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearerToken(r)
		if ok {
			if principal, isCaller := h.auth.Authenticate(r.Context(), key); isCaller {
				next(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, principal)))
				return
			}
			if approver, isApprover := h.approvers.AuthenticateApprover(r.Context(), key); isApprover {
				next(w, r.WithContext(context.WithValue(r.Context(), approverCtxKey{}, approver)))
				return
			}
		}
		h.writeError(w, r, apiError(toolgatetype.CodeUnauthorized, "a valid API key is required: Authorization: Bearer <API_KEY>"))
	}
}

func (h *handler) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
