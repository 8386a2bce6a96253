package registry_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testOriginAcme = "https://api.acme.test"

func TestManifestRequestPlacesInputValues(t *testing.T) {
	t.Parallel()
	tool := parse(t, []byte(baseManifest))
	req, err := tool.BuildRequest(t.Context(), testOriginAcme, json.RawMessage(`{"stationId":"S-17","units":"metric"}`))
	require.NoError(t, err)

	assert.Equal(t, http.MethodGet, req.Method)
	assert.Equal(t, "https://api.acme.test/v3/stations/S-17/latest?format=json&limit=3&units=metric", req.URL.String(),
		"limit takes its schema default; parameters in name order")
	assert.Equal(t, testSecret, req.Header.Get("X-API-Key"), "the credential, in its header")
	assert.Equal(t, "toolgate", req.Header.Get("X-Client"))
	assert.Equal(t, "metric", req.Header.Get("X-Units"))
	assert.Equal(t, "application/json", req.Header.Get("Accept"))
	assert.Nil(t, req.Body)
}

func TestManifestRequestLeavesOutAbsentFields(t *testing.T) {
	t.Parallel()
	tool := parse(t, []byte(baseManifest))
	req, err := tool.BuildRequest(t.Context(), testOriginAcme, json.RawMessage(`{"stationId":"S1","limit":7}`))
	require.NoError(t, err)
	assert.Equal(t, "format=json&limit=7", req.URL.RawQuery, "no units parameter when the input has none")
	_, has := req.Header["X-Units"]
	assert.False(t, has, "no X-Units header when the input has no units")
}

// TestManifestRequestPathEscaping: a value placed in the path stays one
// segment, whatever it holds.
func TestManifestRequestPathEscaping(t *testing.T) {
	t.Parallel()
	tool := parse(t, []byte(baseManifest))
	tests := []struct {
		station string
		want    string // the escaped path sent, or "" for a refusal
	}{
		{"S1", "/v3/stations/S1/latest"},
		{"a/b", "/v3/stations/a%2Fb/latest"},
		{"../../admin", "/v3/stations/..%2F..%2Fadmin/latest"},
		{"x?all=1#frag", "/v3/stations/x%3Fall=1%23frag/latest"},
		{"100%", "/v3/stations/100%25/latest"},
		{"a b", "/v3/stations/a%20b/latest"},
		{"...", "/v3/stations/.../latest"},
		{"..", ""},
		{".", ""},
	}
	for _, tt := range tests {
		t.Run(tt.station, func(t *testing.T) {
			t.Parallel()
			input, _ := json.Marshal(map[string]any{"stationId": tt.station})
			req, err := tool.BuildRequest(t.Context(), testOriginAcme, input)
			if tt.want == "" {
				require.Error(t, err, "a dot segment from the input would change the path")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, req.URL.EscapedPath())
			assert.Equal(t, "api.acme.test", req.URL.Host)
			assert.Equal(t, "format=json&limit=3", req.URL.RawQuery, "nothing in the path value reaches the query")
		})
	}
}

// TestManifestRequestQueryCannotBeInjected: a value holding "&" or "="
// stays the value of its own parameter.
func TestManifestRequestQueryCannotBeInjected(t *testing.T) {
	t.Parallel()
	tool := parse(t, []byte(baseManifest))
	for _, units := range []string{"metric&admin=true", "metric#x", "a=b", "metric\r\nX: 1"} {
		input, _ := json.Marshal(map[string]any{"stationId": "S1", "units": units, "limit": 2})
		doc := manifestDoc(t)
		deletePath(doc, "endpoint.headers.X-Units") // headers refuse line breaks; this test is about the query
		tool = parse(t, encode(t, doc))
		req, err := tool.BuildRequest(t.Context(), testOriginAcme, input)
		require.NoError(t, err)
		q := req.URL.Query()
		assert.Equal(t, []string{units}, q["units"], units)
		assert.Len(t, q, 3, "format, limit, units and nothing else: %s", req.URL.RawQuery)
	}
}

// TestManifestRequestHeaderInjection: an input value with a line break
// cannot become a header of its own; the request is refused.
func TestManifestRequestHeaderInjection(t *testing.T) {
	t.Parallel()
	tool := parse(t, []byte(baseManifest))
	for _, units := range []string{"metric\r\nX-Injected: 1", "metric\nX-Injected: 1", "metric\rX", "nul\x00byte"} {
		input, _ := json.Marshal(map[string]any{"stationId": "S1", "units": units})
		_, err := tool.BuildRequest(t.Context(), testOriginAcme, input)
		require.Error(t, err, "%q", units)
		assert.Contains(t, err.Error(), "header X-Units")
		assert.NotContains(t, err.Error(), testSecret)
	}
}

func TestManifestRequestBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body any
		want string
	}{
		{name: "the input, with defaults", body: "input", want: `{"stationId":"S1","units":"metric","limit":3}`},
		{name: "an object template", body: map[string]any{
			"station": "{stationId}",
			"size":    "{limit}",
			"label":   "station {stationId} in {units}",
			"fixed":   map[string]any{"flag": true, "n": 1.5, "list": []any{"{units}", "x"}},
		}, want: `{"station":"S1","size":3,"label":"station S1 in metric","fixed":{"flag":true,"n":1.5,"list":["metric","x"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc := manifestDoc(t)
			setPath(doc, "endpoint.method", "POST")
			setPath(doc, "endpoint.body", tt.body)
			tool := parse(t, encode(t, doc))
			req, err := tool.BuildRequest(t.Context(), testOriginAcme, json.RawMessage(`{"stationId":"S1","units":"metric"}`))
			require.NoError(t, err)
			assert.Equal(t, http.MethodPost, req.Method)
			assert.Equal(t, "application/json", req.Header.Get("Content-Type"))
			body, err := io.ReadAll(req.Body)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(body))
			require.NotNil(t, req.GetBody, "a retrying transport can replay the body")
		})
	}
}

// TestManifestRequestBodyLeavesOutAbsentFields: template members whose
// field is absent are left out, not sent empty.
func TestManifestRequestBodyLeavesOutAbsentFields(t *testing.T) {
	t.Parallel()
	doc := manifestDoc(t)
	setPath(doc, "endpoint.method", "POST")
	setPath(doc, "endpoint.body", map[string]any{"station": "{stationId}", "units": "{units}", "note": "in {units}", "all": []any{"{units}"}})
	tool := parse(t, encode(t, doc))
	req, err := tool.BuildRequest(t.Context(), testOriginAcme, json.RawMessage(`{"stationId":"S1"}`))
	require.NoError(t, err)
	body, err := io.ReadAll(req.Body)
	require.NoError(t, err)
	assert.JSONEq(t, `{"station":"S1","all":[]}`, string(body))
}

// TestManifestRequestTargetsTheOriginInForce: the request goes to the
// origin the gateway passes (the operator's, when configured), with the
// manifest's path.
func TestManifestRequestTargetsTheOriginInForce(t *testing.T) {
	t.Parallel()
	tool := parse(t, []byte(baseManifest))
	req, err := tool.BuildRequest(t.Context(), "http://127.0.0.1:9000", json.RawMessage(`{"stationId":"S1"}`))
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:9000/v3/stations/S1/latest?format=json&limit=3", req.URL.String())
}
