package registry_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// testSecret is the provider key the manifest tests hand the gateway. It is
// distinctive so that a test can search every output for it.
const testSecret = "tgsecret-7f3a9c1e-DO-NOT-LEAK"

// baseManifest is a valid manifest exercising most of the format: a path
// placeholder, optional query parameters (one with a default), a fixed
// header, a credential, an output pointer and an example.
const baseManifest = `{
  "schemaVersion": "toolgate.tool/v1",
  "slug": "station-readings",
  "name": "Station Readings",
  "description": "Latest readings of an air monitoring station",
  "category": "Environment",
  "tags": ["air", "sensors"],
  "version": 1,
  "provider": {"name": "Acme Sensors"},
  "endpoint": {
    "origin": "https://api.acme.test",
    "method": "GET",
    "path": "/v3/stations/{stationId}/latest",
    "query": {"units": "{units}", "limit": "{limit}", "format": "json"},
    "headers": {"X-Client": "toolgate", "X-Units": "{units}"}
  },
  "credential": {"header": "X-API-Key", "env": "ACME_API_KEY"},
  "pricing": {"type": "free"},
  "capabilities": {"readOnly": true, "idempotent": true, "dataRetention": "none"},
  "inputSchema": {
    "type": "object",
    "required": ["stationId"],
    "additionalProperties": false,
    "properties": {
      "stationId": {"type": "string", "minLength": 1},
      "units": {"type": "string"},
      "limit": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3}
    }
  },
  "outputSchema": {
    "type": "array",
    "items": {
      "type": "object",
      "required": ["sensor", "value"],
      "additionalProperties": false,
      "properties": {"sensor": {"type": "string"}, "value": {"type": "number"}}
    }
  },
  "output": {"pointer": "/results", "errorMessagePointer": "/detail"},
  "examples": [{"input": {"stationId": "S1"}, "output": [{"sensor": "pm25", "value": 4.2}]}]
}`

// manifestDoc returns baseManifest decoded, fresh on every call, for a test
// to change.
func manifestDoc(t testing.TB) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(baseManifest), &doc))
	return doc
}

// setPath sets (or, with value nil and del true, removes) the member at a
// dotted path of doc, creating objects on the way.
func setPath(doc map[string]any, path string, value any) {
	parts := strings.Split(path, ".")
	cur := doc
	for _, p := range parts[:len(parts)-1] {
		next, ok := cur[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[p] = next
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = value
}

func deletePath(doc map[string]any, path string) {
	parts := strings.Split(path, ".")
	cur := doc
	for _, p := range parts[:len(parts)-1] {
		cur = cur[p].(map[string]any)
	}
	delete(cur, parts[len(parts)-1])
}

func encode(t testing.TB, doc any) []byte {
	t.Helper()
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	return b
}

// secretEnv is a LookupEnv that knows ACME_API_KEY, and no other name.
func secretEnv(name string) (string, bool) {
	if name == "ACME_API_KEY" {
		return testSecret, true
	}
	return "", false
}

// parseOpts are the options the tests parse with: the test key in the
// environment, and operator origins for the given slugs.
func parseOpts(operatorOrigins map[string]string) *registry.ParseOptions {
	return &registry.ParseOptions{OperatorOrigins: operatorOrigins, LookupEnv: secretEnv}
}

// parse parses data as "tool.json" with the test key in the environment.
func parse(t testing.TB, data []byte) *registry.Tool {
	t.Helper()
	tool, err := registry.ParseManifest("tool.json", data, parseOpts(nil))
	require.NoError(t, err)
	return tool
}

// manifestError asserts that err is a *ManifestError and returns it.
func manifestError(t testing.TB, err error) *registry.ManifestError {
	t.Helper()
	require.Error(t, err)
	var me *registry.ManifestError
	require.True(t, errors.As(err, &me), "%T: %v", err, err)
	require.ErrorIs(t, err, registry.ErrInvalidManifest)
	return me
}
