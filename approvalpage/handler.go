package approvalpage

import (
	"log/slog"
	"net/http"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Options configure a handler. A nil *Options means the defaults.
type Options struct {
	// Approvers maps approver keys to approvers, the people who sign in.
	// Nil accepts no key: every sign-in is refused.
	Approvers apikey.ApproverAuthenticator
	// Callers maps caller (API) keys to principals, only so that a person
	// who signs in with one is told it is a caller's key; it never signs
	// anyone in. Nil means Approvers when it is an apikey.Authenticator
	// too, as an apikey.KeyStore is; otherwise a caller's key is refused
	// as any other key that is not an approver's.
	Callers apikey.Authenticator
	// Provider lets people sign in with the organization's identity
	// provider beside approver keys; nil offers keys alone.
	Provider *ProviderSignIn
	// Sessions keeps the signed-in approvers' sessions; nil means a
	// MemorySessionStore on the gateway's clock.
	Sessions SessionStore
	// AuthLimit slows the guessing of approver keys: a client address
	// whose sign-ins failed too often is refused (429, with Retry-After)
	// until its window ends, whatever key it sends; a key prefix, every
	// wrong key with it, but never the right key from an address that has
	// not failed. The page says which limit refused. Nil means
	// a Limiter with the defaults, counting in this process's memory.
	AuthLimit *authlimit.Limiter
	// MaxBodyBytes caps the bodies of posted forms; 0 means 1 MiB.
	MaxBodyBytes int64
	// Logger receives request errors; nil discards them. Keys and session
	// tokens are never logged.
	Logger *slog.Logger
}

// Handler serves the approval pages of a gateway.
type Handler struct {
	gw        *toolgate.Gateway
	approvers apikey.ApproverAuthenticator
	callers   apikey.Authenticator
	sessions  SessionStore
	provider  *providerSignIn
	limit     *authlimit.Limiter
	clock     toolgatetype.Clock
	maxBody   int64
	log       *slog.Logger
	mux       *http.ServeMux
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the approval pages of gw.
func NewHandler(gw *toolgate.Gateway, opts *Options) *Handler {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Approvers == nil {
		o.Approvers = apikey.NewKeyStore()
	}
	if o.Callers == nil {
		o.Callers, _ = o.Approvers.(apikey.Authenticator)
	}
	if o.Sessions == nil {
		o.Sessions = NewMemorySessionStore(gw.Clock())
	}
	if o.AuthLimit == nil {
		o.AuthLimit = authlimit.Default()
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = httpx.DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		gw:        gw,
		approvers: o.Approvers,
		callers:   o.Callers,
		sessions:  o.Sessions,
		provider:  newProviderSignIn(o.Provider),
		limit:     o.AuthLimit,
		clock:     gw.Clock(),
		maxBody:   o.MaxBodyBytes,
		log:       o.Logger,
		mux:       http.NewServeMux(),
	}
	h.Register(h.mux)
	h.mux.Handle("/", httpx.NotFound(h.log))
	return h
}

// Register adds the pages' routes to mux, so that they can share a mux
// with the HTTP API: each of their paths answers 405, with the API's JSON
// error, to the methods it does not take, and mux's "/" is left to the
// caller.
func (h *Handler) Register(mux *http.ServeMux) {
	m := httpx.NewRouter(mux, h.log)
	m.Handle("GET "+httpx.ApprovalPagesPath, h.approvalListPage)
	m.Handle("POST "+httpx.ApprovalPagesPath, h.approvalListForm)
	m.Handle("GET "+httpx.ApprovalPagesPath+"/{id}", h.approvalPage)
	m.Handle("POST "+httpx.ApprovalPagesPath+"/{id}", h.approvalPageForm)
	m.RefuseOtherMethods()
	if h.provider != nil {
		// Outside the router: a path that also answered 405 to other
		// methods would conflict with POST /approvals/{id} when under it.
		mux.HandleFunc("GET "+h.provider.path, h.providerCallback)
	}
}

// ServeHTTP serves the pages; any other path is the API's 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// logError logs an error the person is told of only in general words.
func (h *Handler) logError(r *http.Request, err error) {
	h.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "error", err)
}
