package httpapi

import (
	"net/http"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ApprovalPagePath is where a person decides approval request id, the path
// of the approveUrl the API answers with, relative to where the handlers
// are mounted: for links made outside a request, such as a webhook's
// approveUrl.
func ApprovalPagePath(id string) string { return httpx.ApprovalPagePath(id) }

// BaseURL is the address r reached the HTTP API at: its scheme, host,
// X-Forwarded-Prefix and the prefix a mounting server stripped. The links
// of the API's answers start with it, and a handler served beside the API
// under the same prefix (the MCP server's) links to the API's pages with it.
func BaseURL(r *http.Request) string { return httpx.BaseURL(r) }

// StatusOf is the HTTP status an error code is answered with: the status
// of each code the API documents, 500 for any other.
func StatusOf(code toolgatetype.Code) int { return httpx.StatusOf(code) }
