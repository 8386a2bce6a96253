package registry_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// TestManifestToolDigestCoversItsRequest: the digested manifest of a
// manifest tool carries its templates, pointers and that a credential is
// sent, in which header; never the credential's value.
func TestManifestToolDigestCoversItsRequest(t *testing.T) {
	t.Parallel()
	tool := parse(t, []byte(baseManifest))
	raw, err := json.Marshal(registry.ManifestOf(tool, "https://api.acme.test"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))

	assert.Equal(t, map[string]any{
		"origin": "https://api.acme.test", "method": "GET", "path": "/v3/stations/{stationId}/latest",
		"query":   map[string]any{"units": "{units}", "limit": "{limit}", "format": "json"},
		"headers": map[string]any{"X-Client": "toolgate", "X-Units": "{units}"},
	}, m["endpoint"])
	assert.Equal(t, map[string]any{"header": "X-API-Key"}, m["credential"])
	assert.Equal(t, map[string]any{"pointer": "/results", "errorMessagePointer": "/detail"}, m["output"])
	assert.NotContains(t, string(raw), testSecret)
	assert.NotContains(t, string(raw), "ACME_API_KEY", "where the key is kept is the operator's business")
}

// TestManifestToolDigestChangesWithEverythingButTheKey: any change to what
// the tool is or sends is a new digest, so earlier approvals go stale; a
// new key value, or the same key kept elsewhere, is not.
func TestManifestToolDigestChangesWithEverythingButTheKey(t *testing.T) {
	t.Parallel()
	digest := func(t *testing.T, doc map[string]any, opts *registry.ParseOptions) string {
		t.Helper()
		tool, err := registry.ParseManifest("tool.json", encode(t, doc), opts)
		require.NoError(t, err)
		return register(t, registry.New(), tool).Digest
	}
	base := digest(t, manifestDoc(t), parseOpts(nil))

	changes := map[string]func(d map[string]any){
		"name":                  func(d map[string]any) { d["name"] = "Station Readings 2" },
		"description":           func(d map[string]any) { d["description"] = "Readings" },
		"category":              func(d map[string]any) { d["category"] = "Air" },
		"tags":                  func(d map[string]any) { d["tags"] = []any{"air"} },
		"provider name":         func(d map[string]any) { setPath(d, "provider.name", "Acme") },
		"origin":                func(d map[string]any) { setPath(d, "endpoint.origin", "https://eu.acme.test") },
		"method":                func(d map[string]any) { setPath(d, "endpoint.method", "POST") },
		"path":                  func(d map[string]any) { setPath(d, "endpoint.path", "/v4/stations/{stationId}/latest") },
		"query value":           func(d map[string]any) { setPath(d, "endpoint.query.format", "geojson") },
		"query parameter added": func(d map[string]any) { setPath(d, "endpoint.query.lang", "en") },
		"query parameter gone":  func(d map[string]any) { deletePath(d, "endpoint.query.format") },
		"header value":          func(d map[string]any) { setPath(d, "endpoint.headers.X-Client", "other") },
		"header added":          func(d map[string]any) { setPath(d, "endpoint.headers.X-Trace", "1") },
		"body": func(d map[string]any) {
			setPath(d, "endpoint.method", "POST")
			setPath(d, "endpoint.body", "input")
		},
		"credential header": func(d map[string]any) { setPath(d, "credential.header", "X-Key") },
		"credential scheme": func(d map[string]any) { setPath(d, "credential.scheme", "Token") },
		"no credential":     func(d map[string]any) { delete(d, "credential") },
		"pricing": func(d map[string]any) {
			d["pricing"] = map[string]any{"type": "per_call", "amount": "0.0010"}
		},
		"capabilities": func(d map[string]any) { setPath(d, "capabilities.readOnly", false) },
		"input schema": func(d map[string]any) { setPath(d, "inputSchema.properties.limit.maximum", 20) },
		"output schema": func(d map[string]any) {
			setPath(d, "outputSchema.items.properties.unit", map[string]any{"type": "string"})
		},
		"output pointer":        func(d map[string]any) { setPath(d, "output.pointer", "/data") },
		"error message pointer": func(d map[string]any) { setPath(d, "output.errorMessagePointer", "/message") },
	}
	seen := map[string]string{base: "the base manifest"}
	for name, change := range changes {
		doc := manifestDoc(t)
		change(doc)
		d := digest(t, doc, parseOpts(nil))
		other, dup := seen[d]
		assert.False(t, dup, "changing the %s gives the digest of %s", name, other)
		seen[d] = name
	}

	// Another key value: the same digest.
	otherKey := &registry.ParseOptions{LookupEnv: func(string) (string, bool) { return "a-rotated-key", true }}
	assert.Equal(t, base, digest(t, manifestDoc(t), otherKey))

	// The key kept in a file instead of the environment: the same digest.
	keyFile := filepath.Join(t.TempDir(), "acme.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("from-a-file"), 0o600))
	doc := manifestDoc(t)
	setPath(doc, "credential", map[string]any{"header": "X-API-Key", "file": keyFile})
	assert.Equal(t, base, digest(t, doc, parseOpts(nil)))
}
