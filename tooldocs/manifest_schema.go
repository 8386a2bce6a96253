package tooldocs

import (
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate/registry"
)

// manifestSchemaBody is the JSON Schema of the tool manifest format, served
// so that an editor pointed at it (a manifest's "$schema") completes and
// checks manifests as they are written.
var manifestSchemaBody = registry.ManifestFormatSchema()

// serveManifestSchema answers GET /v1/registry/manifest.schema.json.
func serveManifestSchema(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/schema+json")
	w.Header().Set("Content-Length", strconv.Itoa(len(manifestSchemaBody)))
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(manifestSchemaBody)
}
