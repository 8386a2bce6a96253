// Package toolgatehttp serves everything a gateway serves over HTTP on one
// handler: the JSON API (package httpapi), the approval pages where people
// decide approval requests (package approvalpage), and the documentation
// of every tool (package tooldocs). The API's answers link to the other
// two, so they are served together, under the same prefix:
//
//	mux.Handle("/gateway/", http.StripPrefix("/gateway", toolgatehttp.NewHandler(gw, opts)))
//
// The API's routes include the public key set receipts verify with, GET
// /.well-known/toolgate-receipt-keys, served like the rest under the
// prefix: a server that mounts the handler under one and wants the keys at
// its root as well routes that path to the handler too.
//
// Each part is also a handler of its own, for a server that wants only
// some of them, and each can add its routes to a shared ServeMux with
// Register, which is how this handler is made.
package toolgatehttp

import (
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/propagation"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/tooldocs"
)

// Options configure a handler. A nil *Options means the defaults.
type Options struct {
	// Authenticator maps API keys to principals. Nil refuses every key,
	// which leaves only the public registry and documentation reachable.
	Authenticator apikey.Authenticator
	// Approvers maps approver keys to approvers, the people who decide
	// approval requests, on the API and on the approval pages. Nil means
	// the Authenticator when it is one too, as an apikey.KeyStore is;
	// otherwise no approver key is accepted.
	Approvers apikey.ApproverAuthenticator
	// Tokens verifies OAuth access tokens, which the API accepts beside
	// API keys (package oauth); nil accepts API keys only. The approval
	// pages take approver keys, and people signed in through Provider.
	Tokens apikey.TokenVerifier
	// Provider lets people sign in on the approval pages with the
	// organization's identity provider, beside approver keys; nil offers
	// keys alone.
	Provider *approvalpage.ProviderSignIn
	// Sessions keeps the sign-in sessions of the approval pages; nil keeps
	// them in this process's memory (approvalpage.MemorySessionStore).
	// Instances behind one address share theirs through their store
	// (StoreSessions).
	Sessions approvalpage.SessionStore
	// AuthLimit slows the guessing of keys, on the API and the approval
	// pages together (see package authlimit); nil means one Limiter with
	// the defaults, counting in this process's memory.
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

// handler is the three parts on one mux.
type handler struct {
	mux   *http.ServeMux
	trace propagation.TextMapPropagator
}

// NewHandler returns the HTTP API of gw with its approval pages and its
// tools' documentation.
func NewHandler(gw *toolgate.Gateway, opts *Options) http.Handler {
	o := Options{}
	if opts != nil {
		o = *opts
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
		// Resolved once, so that the API and the pages accept the same
		// approvers.
		o.Approvers = apikey.ApproversOf(o.Authenticator)
	}
	if o.AuthLimit == nil {
		// One for both, so that failures on either count together.
		o.AuthLimit = authlimit.Default()
	}
	h := &handler{mux: http.NewServeMux(), trace: o.TracePropagator}
	httpapi.NewHandler(gw, &httpapi.Options{
		Authenticator:     o.Authenticator,
		Approvers:         o.Approvers,
		Tokens:            o.Tokens,
		AuthLimit:         o.AuthLimit,
		MaxBodyBytes:      o.MaxBodyBytes,
		ExposeUsageCounts: o.ExposeUsageCounts,
		Logger:            o.Logger,
		TracePropagator:   o.TracePropagator,
	}).Register(h.mux)
	approvalpage.NewHandler(gw, &approvalpage.Options{
		Approvers:    o.Approvers,
		Callers:      o.Authenticator,
		Provider:     o.Provider,
		Sessions:     o.Sessions,
		AuthLimit:    o.AuthLimit,
		MaxBodyBytes: o.MaxBodyBytes,
		Logger:       o.Logger,
	}).Register(h.mux)
	tooldocs.NewHandler(gw, &tooldocs.Options{
		ExposeUsageCounts: o.ExposeUsageCounts,
		Logger:            o.Logger,
	}).Register(h.mux)
	h.mux.Handle("/", httpx.NotFound(o.Logger))
	return h
}

// ServeHTTP serves the request. One that carries a W3C traceparent
// continues that trace: the gateway's spans for it are its children. Where
// a tracing middleware already began a span for the request, that span is
// the parent instead.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, httpx.ContinueTrace(r, h.trace))
}
