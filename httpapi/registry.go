package httpapi

import (
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// entryOptions are the options of the registry's answers to r: as its
// caller sees the registry when it sent a caller's key or token (a tool a
// rule hides from it is absent), else every tool.
func (h *Handler) entryOptions(r *http.Request) toolgatetype.EntryOptions {
	return toolgatetype.EntryOptions{ExposeUsageCounts: h.opts.ExposeUsageCounts, Principal: principalOf(r)}
}

// optionallyAuthed serves the public registry: a request without
// credentials as it is, one with a caller's key or token as that caller
// (eitherAuthed), so that the organization's rules hide from it what they
// hide. A credential that is not accepted is refused as on any route,
// rather than silently listing what its holder may not see.
func (h *Handler) optionallyAuthed(next http.HandlerFunc) http.HandlerFunc {
	withCaller := h.eitherAuthed(next)
	return func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Authorization")) == 0 {
			next(w, r)
			return
		}
		withCaller(w, r)
	}
}

// listTools answers GET /v1/registry/tools?q=&limit=&offset=.
func (h *Handler) listTools(w http.ResponseWriter, r *http.Request) {
	query := r.URL.Query()
	limit, err := intParam(query.Get("limit"), "limit")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	offset, err := intParam(query.Get("offset"), "offset")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	entries, total, err := h.gw.List(r.Context(), query.Get("q"), limit, offset, h.entryOptions(r))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	list := toolgatetype.RegistryList{Tools: make([]toolgatetype.RegistryEntry, len(entries)), Total: total}
	for i := range entries {
		list.Tools[i] = entries[i].RegistryEntry
		httpx.WithLinks(&list.Tools[i])
	}
	httpx.WriteJSON(w, http.StatusOK, list)
}

// intParam parses an optional integer query parameter; empty is 0.
func intParam(v, name string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, httpx.Errorf(toolgatetype.CodeInvalidRequest, "%s must be an integer", name)
	}
	return n, nil
}

// toolEntry answers GET /v1/registry/tools/{tool} with the full entry.
func (h *Handler) toolEntry(w http.ResponseWriter, r *http.Request) {
	e, err := h.gw.Entry(r.Context(), r.PathValue("tool"), h.entryOptions(r))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WithLinks(&e.RegistryEntry)
	httpx.WriteJSON(w, http.StatusOK, e.RegistryEntry)
}
