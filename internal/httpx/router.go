package httpx

import (
	"log/slog"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/toolgatetype"
)

// DefaultMaxBodyBytes caps request bodies (1 MiB).
const DefaultMaxBodyBytes = 1 << 20

// Router registers routes on a ServeMux and remembers each path's methods,
// so that wrong methods get the same JSON error body as everything else,
// from handlers of their own rather than by routing every request twice.
// Several handlers may share one ServeMux, each with a Router of its own,
// as long as no two register the same path.
type Router struct {
	mux     *http.ServeMux
	log     *slog.Logger
	methods map[string][]string // by path pattern
}

// NewRouter returns a Router that registers on mux. Errors are written
// with log, which hears only of internal ones.
func NewRouter(mux *http.ServeMux, log *slog.Logger) *Router {
	return &Router{mux: mux, log: log, methods: map[string][]string{}}
}

// Handle registers h for pattern, "METHOD /path".
func (m *Router) Handle(pattern string, h http.HandlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	m.mux.HandleFunc(pattern, h)
	m.methods[path] = append(m.methods[path], method)
}

// RefuseOtherMethods answers 405 on every path registered so far for the
// methods it lacks. A method-less pattern is less specific than the real
// routes, so it only sees what they do not take.
func (m *Router) RefuseOtherMethods() {
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
			WriteError(w, r, m.log, Errorf(CodeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		})
	}
}

// NotFound answers every request with the API's 404: for the "/" of a mux
// whose routes are all registered.
func NotFound(log *slog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, log, Errorf(toolgatetype.CodeNotFound, "there is nothing at %s", r.URL.Path))
	}
}

// ContinueTrace returns r continuing the trace its traceparent names, read
// with p: the gateway's spans for the request are its children. Where a
// tracing middleware already began a span for the request, that span is
// the parent instead, and r is returned as it is.
func ContinueTrace(r *http.Request, p propagation.TextMapPropagator) *http.Request {
	if trace.SpanContextFromContext(r.Context()).IsValid() || r.Header.Get("Traceparent") == "" {
		return r
	}
	return r.WithContext(p.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
}
