package httpapi

import (
	"net/http"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The routes a registry entry names, relative to where the handler is
// mounted. The gateway knows no routes: an entry gets them here, from the
// layer that serves them.
func registryPath(slug string) string { return "/v1/registry/tools/" + slug }
func docsPath(slug string) string     { return registryPath(slug) + "/docs" }
func openAPIPath(slug string) string  { return registryPath(slug) + "/openapi.json" }
func llmsPath(slug string) string     { return registryPath(slug) + "/llms.txt" }
func versionsPath(slug string) string { return registryPath(slug) + "/versions" }
func pagePath(slug string) string     { return "/tools/" + slug }
func quotePath(slug string) string    { return "/v1/tools/" + slug + "/quote" }
func callPath(slug string) string     { return "/v1/tools/" + slug + "/call" }

// Where approval requests are made and read, and where people decide them.
const (
	approvalRequestsPath = "/v1/approval-requests"
	approvalPagesPath    = "/approvals"
)

func approvalPagePath(id string) string { return approvalPagesPath + "/" + id }

// ApprovalPagePath is where a person decides approval request id, relative
// to where the handler is mounted: for links made outside a request, such
// as a webhook's approveUrl.
func ApprovalPagePath(id string) string { return approvalPagePath(id) }

// BaseURL is the address r reached the HTTP API at: its scheme, host,
// X-Forwarded-Prefix and the prefix a mounting server stripped. The links
// of the API's answers start with it, and a handler served beside the API
// under the same prefix (the MCP server's) links to the API's pages with it.
func BaseURL(r *http.Request) string { return baseURL(r) }

// withLinks fills in an entry's call route and documentation paths.
func withLinks(e *toolgatetype.RegistryEntry) {
	e.Access.Endpoint.Method = http.MethodPost
	e.Access.Endpoint.Path = callPath(e.Slug)
	e.Documentation = toolgatetype.EntryDocs{
		JSON:    docsPath(e.Slug),
		OpenAPI: openAPIPath(e.Slug),
		LLMs:    llmsPath(e.Slug),
		Human:   pagePath(e.Slug),
	}
}
