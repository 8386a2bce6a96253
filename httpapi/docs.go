package httpapi

import "net/http"

// docRoutes registers the documentation endpoints.
func (h *handler) docRoutes(m *http.ServeMux) {}
