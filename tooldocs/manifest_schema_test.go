package tooldocs_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/tooldocs"
)

// TestManifestSchemaIsServed: the manifest format's JSON Schema is public,
// the very document manifests are validated against.
func TestManifestSchemaIsServed(t *testing.T) {
	t.Parallel()
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: registry.New()})
	require.NoError(t, err)
	srv := httptest.NewServer(tooldocs.NewHandler(gw, nil))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/v1/registry/manifest.schema.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/schema+json", resp.Header.Get("Content-Type"))
	assert.Equal(t, string(registry.ManifestFormatSchema()), string(body))
	var schema map[string]any
	require.NoError(t, json.Unmarshal(body, &schema))
	assert.Equal(t, "http://json-schema.org/draft-07/schema#", schema["$schema"])

	resp, err = http.Post(srv.URL+"/v1/registry/manifest.schema.json", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}
