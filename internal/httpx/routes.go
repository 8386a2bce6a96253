package httpx

import (
	"net/http"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The routes a registry entry names, relative to where the handlers are
// mounted. The gateway knows no routes: an entry gets them here, from the
// layer that serves them.
func RegistryPath(slug string) string { return "/v1/registry/tools/" + slug }
func DocsPath(slug string) string     { return RegistryPath(slug) + "/docs" }
func OpenAPIPath(slug string) string  { return RegistryPath(slug) + "/openapi.json" }
func LLMsPath(slug string) string     { return RegistryPath(slug) + "/llms.txt" }
func VersionsPath(slug string) string { return RegistryPath(slug) + "/versions" }
func ToolPagePath(slug string) string { return "/tools/" + slug }
func QuotePath(slug string) string    { return "/v1/tools/" + slug + "/quote" }
func CallPath(slug string) string     { return "/v1/tools/" + slug + "/call" }

// Where approval requests are made and read, and where people decide them.
const (
	ApprovalRequestsPath = "/v1/approval-requests"
	ApprovalPagesPath    = "/approvals"
)

// ApprovalPagePath is where a person decides approval request id.
func ApprovalPagePath(id string) string { return ApprovalPagesPath + "/" + id }

// WithLinks fills in an entry's call route and documentation paths.
func WithLinks(e *toolgatetype.RegistryEntry) {
	e.Access.Endpoint.Method = http.MethodPost
	e.Access.Endpoint.Path = CallPath(e.Slug)
	e.Documentation = toolgatetype.EntryDocs{
		JSON:    DocsPath(e.Slug),
		OpenAPI: OpenAPIPath(e.Slug),
		LLMs:    LLMsPath(e.Slug),
		Human:   ToolPagePath(e.Slug),
	}
}
