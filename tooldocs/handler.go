// Package tooldocs publishes the documentation of a gateway's tools: for
// each tool a documentation record (JSON), an OpenAPI 3.1 document of its
// quote and call, an llms.txt for a model to read before calling it, its
// version history and an HTML page for people; for the registry, an
// llms.txt index of every tool and the JSON Schema of the manifest format.
//
//	GET /v1/registry/tools/{tool}/docs           the documentation record
//	GET /v1/registry/tools/{tool}/openapi.json   the OpenAPI document
//	GET /v1/registry/tools/{tool}/llms.txt       the tool for a model
//	GET /v1/registry/tools/{tool}/versions       every version, newest first
//	GET /v1/registry/llms.txt                    the index of every tool
//	GET /v1/registry/manifest.schema.json        the manifest format
//	GET /tools/{tool}                            the page for people
//
// Everything is public, like the registry: it is what the registry already
// shows, arranged for a reader. The documents describe the calls of the
// HTTP API (package httpapi) and link to it absolutely, at the address the
// request reached the gateway at: mount them beside the API, under the
// same prefix, as package toolgatehttp does.
package tooldocs

import (
	"log/slog"
	"net/http"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Options configure a handler. A nil *Options means the defaults.
type Options struct {
	// ExposeUsageCounts shows exact usage counts in the registry entries
	// the documentation records carry, next to the coarse labels.
	ExposeUsageCounts bool
	// Logger receives request errors; nil discards them.
	Logger *slog.Logger
}

// Handler serves the documentation of a gateway's tools.
type Handler struct {
	gw           *toolgate.Gateway
	entryOptions toolgatetype.EntryOptions
	log          *slog.Logger
	mux          *http.ServeMux
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the documentation of gw's tools.
func NewHandler(gw *toolgate.Gateway, opts *Options) *Handler {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		gw:           gw,
		entryOptions: toolgatetype.EntryOptions{ExposeUsageCounts: o.ExposeUsageCounts},
		log:          o.Logger,
		mux:          http.NewServeMux(),
	}
	h.Register(h.mux)
	h.mux.Handle("/", httpx.NotFound(h.log))
	return h
}

// Register adds the documentation's routes to mux, so that they can share
// a mux with the HTTP API: each of their paths answers 405, with the API's
// JSON error, to the methods it does not take, and mux's "/" is left to
// the caller.
func (h *Handler) Register(mux *http.ServeMux) {
	m := httpx.NewRouter(mux, h.log)
	m.Handle("GET /v1/registry/manifest.schema.json", serveManifestSchema)
	m.Handle("GET /v1/registry/tools/{tool}/docs", h.toolDocsRecord)
	m.Handle("GET /v1/registry/tools/{tool}/openapi.json", h.toolOpenAPI)
	m.Handle("GET /v1/registry/tools/{tool}/llms.txt", h.toolLLMs)
	m.Handle("GET /v1/registry/tools/{tool}/versions", h.toolVersions)
	m.Handle("GET /v1/registry/llms.txt", h.registryLLMs)
	m.Handle("GET /tools/{tool}", h.toolPage)
	m.RefuseOtherMethods()
}

// ServeHTTP serves the documentation; any other path is the API's 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// writeError answers with err; see httpx.WriteError.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpx.WriteError(w, r, h.log, err)
}
