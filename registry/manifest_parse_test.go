package registry_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

func TestParseManifestBuildsARegistrableTool(t *testing.T) {
	t.Parallel()
	tool := parse(t, []byte(baseManifest))

	assert.Equal(t, "station-readings", tool.Slug)
	assert.Equal(t, "Station Readings", tool.Name)
	assert.Equal(t, []string{"air", "sensors"}, tool.Tags)
	assert.Equal(t, 1, tool.Version)
	assert.True(t, tool.Immutable, "a manifest always defines an immutable version")
	assert.Equal(t, registry.Provider{Name: "Acme Sensors", TrustTier: "unverified"}, tool.Provider,
		"the trust tier defaults to unverified, and payment is never verified by a manifest")
	assert.Equal(t, registry.Endpoint{Origin: "https://api.acme.test", Method: http.MethodGet, Path: "/v3/stations/{stationId}/latest"}, tool.Endpoint)
	assert.True(t, tool.Pricing.Amount.IsZero())
	assert.Equal(t, registry.PricingFree, tool.Pricing.Type)
	assert.Equal(t, &registry.HTTPTemplate{
		Query:               map[string]string{"units": "{units}", "limit": "{limit}", "format": "json"},
		Headers:             map[string]string{"X-Client": "toolgate", "X-Units": "{units}"},
		CredentialHeader:    "X-API-Key",
		OutputPointer:       "/results",
		ErrorMessagePointer: "/detail",
	}, tool.HTTP)
	assert.JSONEq(t, `{"stationId":"S1"}`, string(tool.ExampleInput))
	assert.JSONEq(t, `[{"sensor":"pm25","value":4.2}]`, string(tool.ExampleOutput))

	v := register(t, registry.New(), tool)
	assert.Regexp(t, digestPattern, v.Digest)
	assert.False(t, v.Tool.Endpoint.Verified)
	assert.False(t, v.Tool.Provider.PaymentVerified)
}

func TestParseManifestPaidTool(t *testing.T) {
	t.Parallel()
	doc := manifestDoc(t)
	setPath(doc, "pricing", map[string]any{"type": "per_call", "amount": "0.0250", "currency": "USD"})
	setPath(doc, "provider.trustTier", "basic")
	tool := parse(t, encode(t, doc))
	assert.True(t, tool.Pricing.Amount.Equal(decimal.RequireFromString("0.025")))
	assert.Equal(t, registry.PricingPerCall, tool.Pricing.Type)
	assert.Equal(t, "basic", tool.Provider.TrustTier)
}

// TestParseManifestErrors: each mistake is one error naming the file, the
// JSON path of the value and the reason.
func TestParseManifestErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	emptyKey := filepath.Join(dir, "empty.key")
	require.NoError(t, os.WriteFile(emptyKey, []byte(" \n"), 0o600))
	splitKey := filepath.Join(dir, "split.key")
	require.NoError(t, os.WriteFile(splitKey, []byte("abc\r\nX-Injected: 1\n"), 0o600))

	tests := []struct {
		name   string
		change func(doc map[string]any)
		raw    string // used instead of the changed base manifest when set
		path   string
		reason string
	}{
		{name: "unknown top-level field", change: func(d map[string]any) { d["owner"] = "me" },
			path: "owner", reason: "is not a field of toolgate.tool/v1"},
		{name: "endpoint vouching for itself", change: func(d map[string]any) { setPath(d, "endpoint.verified", true) },
			path: "endpoint.verified", reason: "a manifest cannot vouch for itself"},
		{name: "payment vouching for itself", change: func(d map[string]any) { setPath(d, "provider.paymentVerified", true) },
			path: "provider.paymentVerified", reason: `only the operator's "trust" config`},
		{name: "missing version", change: func(d map[string]any) { delete(d, "version") },
			path: "version", reason: "is required"},
		{name: "version as a string", change: func(d map[string]any) { d["version"] = "1" },
			path: "version", reason: "must be an integer, not a string"},
		{name: "version zero", change: func(d map[string]any) { d["version"] = 0 },
			path: "version", reason: "must be greater than or equal to 1"},
		{name: "other format", change: func(d map[string]any) { d["schemaVersion"] = "toolgate.tool/v2" },
			path: "schemaVersion", reason: "toolgate.tool/v1"},
		{name: "bad slug", change: func(d map[string]any) { d["slug"] = "Station_Readings" },
			path: "slug", reason: "lowercase letters, digits and dashes"},
		{name: "tag of the wrong type", change: func(d map[string]any) { d["tags"] = []any{"air", 7} },
			path: "tags[1]", reason: "must be a string"},
		{name: "unknown method", change: func(d map[string]any) { setPath(d, "endpoint.method", "TRACE") },
			path: "endpoint.method", reason: "must be one of"},
		{name: "path placeholder naming nothing", change: func(d map[string]any) { setPath(d, "endpoint.path", "/v3/stations/{station}/latest") },
			path: "endpoint.path", reason: "{station} names no property of inputSchema (it has limit, stationId, units)"},
		{name: "path placeholder of an optional field", change: func(d map[string]any) { setPath(d, "endpoint.path", "/v3/{units}/latest") },
			path: "endpoint.path", reason: "{units} must be a required input field or have a default"},
		{name: "path with a query", change: func(d map[string]any) { setPath(d, "endpoint.path", "/v3/latest?all=1") },
			path: "endpoint.path", reason: "not valid in a URL path"},
		{name: "path with a dot segment", change: func(d map[string]any) { setPath(d, "endpoint.path", "/v3/../admin") },
			path: "endpoint.path", reason: `has a ".." segment`},
		{name: "path not starting with a slash", change: func(d map[string]any) { setPath(d, "endpoint.path", "v3/latest") },
			path: "endpoint.path", reason: `must start with "/"`},
		{name: "stray brace", change: func(d map[string]any) { setPath(d, "endpoint.query.units", "{units") },
			path: "endpoint.query.units", reason: "does not close a {field} placeholder"},
		{name: "query placeholder naming nothing", change: func(d map[string]any) { setPath(d, "endpoint.query.units", "{unit}") },
			path: "endpoint.query.units", reason: "{unit} names no property of inputSchema"},
		{name: "query placeholder of an object field", change: func(d map[string]any) {
			setPath(d, "inputSchema.properties.units", map[string]any{"type": "object"})
		}, path: "endpoint.query.units", reason: "must have \"type\" string, number, integer or boolean"},
		{name: "header placeholder naming nothing", change: func(d map[string]any) { setPath(d, "endpoint.headers.X-Units", "{unit}") },
			path: "endpoint.headers.X-Units", reason: "{unit} names no property of inputSchema"},
		{name: "body placeholder naming nothing", change: func(d map[string]any) {
			setPath(d, "endpoint.method", "POST")
			setPath(d, "endpoint.body", map[string]any{"filter": map[string]any{"station": "{station}"}})
		}, path: "endpoint.body.filter.station", reason: "{station} names no property of inputSchema"},
		{name: "body on a GET", change: func(d map[string]any) { setPath(d, "endpoint.body", "input") },
			path: "endpoint.body", reason: "a GET request has no body"},
		{name: "body of another kind", change: func(d map[string]any) {
			setPath(d, "endpoint.method", "POST")
			setPath(d, "endpoint.body", "everything")
		}, path: "endpoint.body", reason: `must be "input" or an object template`},
		{name: "plain http origin", change: func(d map[string]any) { setPath(d, "endpoint.origin", "http://api.acme.test") },
			path: "endpoint.origin", reason: "must use https; plain http is allowed only when the operator's config names an origin for station-readings"},
		{name: "origin with a path", change: func(d map[string]any) { setPath(d, "endpoint.origin", "https://api.acme.test/v3") },
			path: "endpoint.origin", reason: "must be scheme://host[:port]"},
		{name: "origin of another scheme", change: func(d map[string]any) { setPath(d, "endpoint.origin", "ftp://api.acme.test") },
			path: "endpoint.origin", reason: "must be scheme://host[:port]"},
		{name: "invalid input schema", change: func(d map[string]any) { setPath(d, "inputSchema.properties.limit.type", 12) },
			path: "inputSchema", reason: "is not a usable JSON Schema"},
		{name: "input schema not an object", change: func(d map[string]any) { setPath(d, "inputSchema.type", "array") },
			path: "inputSchema", reason: `must describe an object`},
		{name: "remote reference in the output schema", change: func(d map[string]any) {
			setPath(d, "outputSchema.items", map[string]any{"$ref": "https://schemas.example.com/reading.json"})
		}, path: "outputSchema", reason: "only local references"},
		{name: "amount with five decimals", change: func(d map[string]any) {
			d["pricing"] = map[string]any{"type": "per_call", "amount": "0.00001"}
		}, path: "pricing.amount", reason: "at most 4 decimals"},
		{name: "amount of 21 digits", change: func(d map[string]any) {
			d["pricing"] = map[string]any{"type": "per_call", "amount": "100000000000000000000"}
		}, path: "pricing.amount", reason: "at most 4 decimals"},
		{name: "amount of 900,000 digits", change: func(d map[string]any) {
			d["pricing"] = map[string]any{"type": "per_call", "amount": strings.Repeat("9", 900_000)}
		}, path: "pricing.amount", reason: "at most 4 decimals"},
		{name: "amount as a number", change: func(d map[string]any) {
			d["pricing"] = map[string]any{"type": "per_call", "amount": 0.01}
		}, path: "pricing.amount", reason: "must be a string, not a number"},
		{name: "free tool with a price", change: func(d map[string]any) {
			d["pricing"] = map[string]any{"type": "free", "amount": "0.0100"}
		}, path: "pricing.amount", reason: "must be 0 (or left out) for a free tool"},
		{name: "paid tool without a price", change: func(d map[string]any) { d["pricing"] = map[string]any{"type": "per_call"} },
			path: "pricing.amount", reason: "must be more than 0"},
		{name: "pointer without a slash", change: func(d map[string]any) { setPath(d, "output.pointer", "results") },
			path: "output.pointer", reason: "RFC 6901"},
		{name: "pointer with a bad escape", change: func(d map[string]any) { setPath(d, "output.errorMessagePointer", "/a~2b") },
			path: "output.errorMessagePointer", reason: "RFC 6901"},
		{name: "credential from two places", change: func(d map[string]any) { setPath(d, "credential.file", "/run/secrets/acme") },
			path: "credential", reason: "must name exactly one of env or file"},
		{name: "credential from nowhere", change: func(d map[string]any) { deletePath(d, "credential.env") },
			path: "credential", reason: "must name exactly one of env or file"},
		{name: "credential variable not set", change: func(d map[string]any) { setPath(d, "credential.env", "ACME_KEY_UNSET") },
			path: "credential.env", reason: "the environment variable ACME_KEY_UNSET is not set"},
		{name: "credential file missing", change: func(d map[string]any) {
			d["credential"] = map[string]any{"header": "X-API-Key", "file": filepath.Join(dir, "nope.key")}
		}, path: "credential.file", reason: "no such file"},
		{name: "credential file relative", change: func(d map[string]any) {
			d["credential"] = map[string]any{"header": "X-API-Key", "file": "secrets/acme.key"}
		}, path: "credential.file", reason: "must be an absolute path"},
		{name: "credential file empty", change: func(d map[string]any) {
			d["credential"] = map[string]any{"header": "X-API-Key", "file": emptyKey}
		}, path: "credential.file", reason: "is empty"},
		{name: "credential with a line break", change: func(d map[string]any) {
			d["credential"] = map[string]any{"header": "X-API-Key", "file": splitKey}
		}, path: "credential", reason: "line break"},
		{name: "credential in a reserved header", change: func(d map[string]any) { setPath(d, "credential.header", "Host") },
			path: "credential.header", reason: "is set by the gateway's HTTP client"},
		{name: "header template over the credential", change: func(d map[string]any) { setPath(d, "endpoint.headers.x-api-key", "{units}") },
			path: "endpoint.headers.x-api-key", reason: "only the credential sets"},
		{name: "reserved header", change: func(d map[string]any) { setPath(d, "endpoint.headers.Transfer-Encoding", "chunked") },
			path: "endpoint.headers.Transfer-Encoding", reason: "a manifest cannot set it"},
		{name: "header with a line break", change: func(d map[string]any) { setPath(d, "endpoint.headers.X-Client", "a\r\nX-Evil: 1") },
			path: "endpoint.headers.X-Client", reason: "line break"},
		{name: "header name with a space", change: func(d map[string]any) { setPath(d, "endpoint.headers.X Client", "a") },
			path: `endpoint.headers["X Client"]`, reason: "not a valid HTTP header name"},
		{name: "example outside the input schema", change: func(d map[string]any) {
			d["examples"] = []any{map[string]any{"input": map[string]any{"stationId": "S1", "limit": 50}}}
		}, path: "examples[0].input.limit", reason: "the example does not fit inputSchema"},
		{name: "example outside the output schema", change: func(d map[string]any) {
			d["examples"] = []any{map[string]any{"input": map[string]any{"stationId": "S1"}, "output": []any{map[string]any{"sensor": "pm25"}}}}
		}, path: "examples[0].output.0.value", reason: "the example does not fit outputSchema"},
		{name: "duplicate member", raw: strings.Replace(baseManifest, `"version": 1,`, `"version": 1, "version": 2,`, 1),
			path: "version", reason: "is given twice"},
		{name: "invalid JSON", raw: `{"schemaVersion": "toolgate.tool/v1",}`, reason: "invalid JSON at byte"},
		{name: "empty file", raw: ``, reason: "the document is empty or cut short"},
		{name: "invalid UTF-8", raw: strings.Replace(baseManifest, "Acme Sensors", "Acme \xff Sensors", 1), reason: "not valid UTF-8"},
		{name: "two documents", raw: baseManifest + "{}", reason: "more than one JSON value"},
		{name: "not an object", raw: `["toolgate.tool/v1"]`, reason: "must be an object, not an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := []byte(tt.raw)
			if tt.raw == "" && tt.change != nil {
				doc := manifestDoc(t)
				tt.change(doc)
				data = encode(t, doc)
			}
			_, err := registry.ParseManifest("tools/station.json", data, parseOpts(nil))
			me := manifestError(t, err)
			assert.Equal(t, me, firstProblem(registry.CheckManifest("tools/station.json", data, parseOpts(nil))),
				"CheckManifest finds first what ParseManifest reports")
			assert.Equal(t, "tools/station.json", me.File)
			assert.Equal(t, tt.path, me.Path, "%v", err)
			assert.Contains(t, me.Reason, tt.reason)
			assert.NotContains(t, err.Error(), testSecret)
			assert.NotContains(t, err.Error(), "\n", "one line")
			assert.True(t, strings.HasPrefix(err.Error(), "tools/station.json: "), err.Error())
		})
	}
}

// TestParseManifestHTTPOriginNeedsTheOperator: plain HTTP is accepted for
// a slug the operator configured an origin for, and only that slug.
func TestParseManifestHTTPOriginNeedsTheOperator(t *testing.T) {
	t.Parallel()
	doc := manifestDoc(t)
	setPath(doc, "endpoint.origin", "http://127.0.0.1:9000")
	data := encode(t, doc)

	_, err := registry.ParseManifest("tool.json", data, parseOpts(map[string]string{"other-tool": "http://127.0.0.1:9000"}))
	assert.Equal(t, "endpoint.origin", manifestError(t, err).Path)

	tool, err := registry.ParseManifest("tool.json", data, parseOpts(map[string]string{"station-readings": "http://127.0.0.1:9000"}))
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:9000", tool.Endpoint.Origin)
}

// TestParseManifestCredentialFromFile: a key read from a file loses its
// trailing newline, and a file and the environment give the same tool.
func TestParseManifestCredentialFromFile(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "acme.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(testSecret+"\n"), 0o600))
	doc := manifestDoc(t)
	setPath(doc, "credential", map[string]any{"header": "Authorization", "scheme": "Bearer", "file": keyFile})
	tool := parse(t, encode(t, doc))

	req, err := tool.BuildRequest(t.Context(), "https://api.acme.test", json.RawMessage(`{"stationId":"S1"}`))
	require.NoError(t, err)
	assert.Equal(t, "Bearer "+testSecret, req.Header.Get("Authorization"))
}

// TestParseManifestUnconventionalEnvNameIsNotQuoted: a key pasted where the
// variable's name belongs must not reach the start-up error (and its log).
func TestParseManifestUnconventionalEnvNameIsNotQuoted(t *testing.T) {
	t.Parallel()
	doc := manifestDoc(t)
	setPath(doc, "credential.env", "sk_live_51HxPasted")
	_, err := registry.ParseManifest("tool.json", encode(t, doc), parseOpts(nil))
	me := manifestError(t, err)
	assert.Equal(t, "credential.env", me.Path)
	assert.NotContains(t, err.Error(), "sk_live_51HxPasted")
	assert.Contains(t, me.Reason, "the environment variable it names is not set")
}

func TestParseManifestTooLarge(t *testing.T) {
	t.Parallel()
	data := []byte(`{"description": "` + strings.Repeat("a", 1<<20) + `"}`)
	_, err := registry.ParseManifest("big.json", data, nil)
	assert.Contains(t, manifestError(t, err).Reason, "larger than")
}

func TestParseManifestTooDeep(t *testing.T) {
	t.Parallel()
	data := []byte(strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100))
	_, err := registry.ParseManifest("deep.json", data, nil)
	assert.Contains(t, manifestError(t, err).Reason, "nests deeper than")
}
