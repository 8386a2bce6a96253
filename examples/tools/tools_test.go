// The manifests in this directory add three tools to a gateway without Go
// code. These tests load them as the server does, serve each provider's
// recorded answer from a local server, and call the tools through the
// gateway, offline.
package tools_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
)

// The keys the operator would export; distinctive, so their absence from
// outputs shows.
var testKeys = map[string]string{
	"OPENAQ_API_KEY":         "openaq-test-key-5c1d",
	"TMDB_READ_ACCESS_TOKEN": "tmdb-test-token-9e2f",
}

func lookupTestKey(name string) (string, bool) {
	v, ok := testKeys[name]
	return v, ok
}

// recordedProvider answers every request with one recorded response and
// remembers the requests.
type recordedProvider struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func serveRecorded(t *testing.T, status int, fixture string) *recordedProvider {
	t.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", fixture))
	require.NoError(t, err)
	p := &recordedProvider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.reqs = append(p.reqs, r.Clone(r.Context()))
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *recordedProvider) only(t *testing.T) *http.Request {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Len(t, p.reqs, 1)
	return p.reqs[0]
}

// gatewayWith loads every manifest here beside the built-in tools, as the
// server does with "tools": ["*.json"], and points slug at origin, as the
// server's "upstreams" would.
func gatewayWith(t *testing.T, slug, origin string) *toolgate.Gateway {
	t.Helper()
	reg := registry.New()
	require.NoError(t, tools.RegisterAll(reg))
	vs, err := reg.LoadManifests(os.DirFS("."), []string{"*.json"}, &registry.ParseOptions{LookupEnv: lookupTestKey})
	require.NoError(t, err)
	require.Len(t, vs, 3)
	require.NoError(t, reg.SetOrigin(slug, origin))
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg})
	require.NoError(t, err)
	return gw
}

func call(t *testing.T, gw *toolgate.Gateway, slug, input string) toolgatetype.Execution {
	t.Helper()
	q, err := gw.Quote(t.Context(), "alice", slug)
	require.NoError(t, err)
	require.True(t, q.Policy.Callable, "%v", q.Policy.Reasons)
	assert.Equal(t, toolgatetype.RequirementExplicitUnverified, q.Policy.Approval.Requirement, "a manifest cannot verify itself")
	res, err := gw.Call(t.Context(), "alice", toolgatetype.CallRequest{
		Tool: slug, QuoteID: q.Quote.ID, Input: json.RawMessage(input),
		ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: "example-1",
	})
	require.NoError(t, err)
	return res.Execution
}

func TestAirQuality(t *testing.T) {
	t.Parallel()
	provider := serveRecorded(t, 200, "open-meteo-air-quality.json")
	gw := gatewayWith(t, "air-quality", provider.URL)

	exec := call(t, gw, "air-quality", `{"latitude":40.4,"longitude":-3.7,"timezone":"Europe/Madrid"}`)
	require.Equal(t, toolgatetype.StatusCompleted, exec.Status, "%+v", exec.Error)
	assert.JSONEq(t, `{"time":"2026-07-29T18:00","interval":3600,"european_aqi":51,"us_aqi":63,
		"pm10":25.3,"pm2_5":13.7,"nitrogen_dioxide":5.7,"ozone":116.0}`, string(exec.Output))

	req := provider.only(t)
	assert.Equal(t, "/v1/air-quality", req.URL.Path)
	assert.Equal(t, url.Values{
		"latitude": {"40.4"}, "longitude": {"-3.7"}, "timezone": {"Europe/Madrid"},
		"current": {"european_aqi,us_aqi,pm10,pm2_5,nitrogen_dioxide,ozone"},
	}, req.URL.Query())
	assert.Empty(t, req.Header.Get("Authorization"), "a keyless API gets no key")
}

func TestAirQualityLeavesOutTheTimeZone(t *testing.T) {
	t.Parallel()
	provider := serveRecorded(t, 200, "open-meteo-air-quality.json")
	gw := gatewayWith(t, "air-quality", provider.URL)
	exec := call(t, gw, "air-quality", `{"latitude":40.4,"longitude":-3.7}`)
	require.Equal(t, toolgatetype.StatusCompleted, exec.Status, "%+v", exec.Error)
	assert.NotContains(t, provider.only(t).URL.Query(), "timezone")
}

func TestAirQualityProviderError(t *testing.T) {
	t.Parallel()
	provider := serveRecorded(t, 400, "open-meteo-error.json")
	gw := gatewayWith(t, "air-quality", provider.URL)
	exec := call(t, gw, "air-quality", `{"latitude":40.4,"longitude":-3.7}`)
	assert.Equal(t, toolgatetype.StatusFailed, exec.Status)
	require.NotNil(t, exec.Error)
	assert.Equal(t, &toolgatetype.ExecutionError{Code: registry.CodeUpstreamError,
		Message: "Open-Meteo answered HTTP 400 Bad Request; provider message: Latitude must be in range of -90 to 90°. Given: 91.0."}, exec.Error)
}

func TestOpenAQLatest(t *testing.T) {
	t.Parallel()
	provider := serveRecorded(t, 200, "openaq-latest.json")
	gw := gatewayWith(t, "openaq-latest", provider.URL)

	exec := call(t, gw, "openaq-latest", `{"locationId":2178}`)
	require.Equal(t, toolgatetype.StatusCompleted, exec.Status, "%+v", exec.Error)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(exec.Output, &out))
	require.Len(t, out, 3)
	assert.Equal(t, map[string]any{
		"datetime":    map[string]any{"utc": "2024-09-25T22:00:00Z", "local": "2024-09-25T16:00:00-06:00"},
		"value":       0.0023,
		"coordinates": map[string]any{"latitude": 35.1353, "longitude": -106.584702},
		"sensorsId":   float64(3916), "locationsId": float64(2178),
	}, out[0])

	req := provider.only(t)
	assert.Equal(t, "/v3/locations/2178/latest", req.URL.Path)
	assert.Equal(t, testKeys["OPENAQ_API_KEY"], req.Header.Get("X-API-Key"), "the operator's key, from the environment")
	assert.NotContains(t, string(exec.Output), testKeys["OPENAQ_API_KEY"])
}

func TestMovieSearch(t *testing.T) {
	t.Parallel()
	provider := serveRecorded(t, 200, "tmdb-search-movie.json")
	gw := gatewayWith(t, "movie-search", provider.URL)

	exec := call(t, gw, "movie-search", `{"query":"Spirited Away","year":2001}`)
	require.Equal(t, toolgatetype.StatusCompleted, exec.Status, "%+v", exec.Error)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(exec.Output, &out))
	require.Len(t, out, 2)
	assert.Equal(t, float64(129), out[0]["id"])
	assert.Equal(t, "千と千尋の神隠し", out[0]["original_title"])
	for _, dropped := range []string{"adult", "backdrop_path", "genre_ids", "popularity", "poster_path", "video"} {
		assert.NotContains(t, out[0], dropped, "not in the output schema")
	}

	req := provider.only(t)
	assert.Equal(t, "/3/search/movie", req.URL.Path)
	assert.Equal(t, url.Values{"query": {"Spirited Away"}, "year": {"2001"}, "page": {"1"}, "include_adult": {"false"}}, req.URL.Query(),
		"page from its default; no language when none is asked for")
	assert.Equal(t, "Bearer "+testKeys["TMDB_READ_ACCESS_TOKEN"], req.Header.Get("Authorization"))
}

func TestMovieSearchWithABadKey(t *testing.T) {
	t.Parallel()
	provider := serveRecorded(t, 401, "tmdb-invalid-key.json")
	gw := gatewayWith(t, "movie-search", provider.URL)
	exec := call(t, gw, "movie-search", `{"query":"Spirited Away"}`)
	assert.Equal(t, toolgatetype.StatusFailed, exec.Status)
	assert.Equal(t, &toolgatetype.ExecutionError{Code: registry.CodeUpstreamError,
		Message: "TMDB answered HTTP 401 Unauthorized; provider message: Invalid API key: You must be granted a valid key."}, exec.Error)
}

// TestKeyedExamplesNeedTheirKeys: without its environment variable, a keyed
// manifest does not load, and the error says which.
func TestKeyedExamplesNeedTheirKeys(t *testing.T) {
	t.Parallel()
	reg := registry.New()
	_, err := reg.LoadManifests(os.DirFS("."), []string{"movie-search.json"},
		&registry.ParseOptions{LookupEnv: func(string) (string, bool) { return "", false }})
	require.Error(t, err)
	assert.Equal(t, "movie-search.json: credential.env: the environment variable TMDB_READ_ACCESS_TOKEN is not set", err.Error())
}
