package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyEchoingProvider serves a recorded answer, or, for a request without
// the expected key in header or searching for "echo", TMDB's error with
// the key it got echoed back, as a careless provider might. It records the
// keys it was sent.
type keyEchoingProvider struct {
	*httptest.Server
	mu   sync.Mutex
	keys []string
}

func newKeyEchoingProvider(t *testing.T, header, want, fixture string) *keyEchoingProvider {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(examplesDir, "testdata", fixture))
	require.NoError(t, err)
	p := &keyEchoingProvider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get(header)
		p.mu.Lock()
		p.keys = append(p.keys, got)
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if got != want || r.URL.Query().Get("query") == "echo" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"status_code":7,"status_message":"Invalid API key: `+got+`","success":false}`)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *keyEchoingProvider) sent() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys...)
}

// TestServerServesManifestTools runs the built server with two keyed
// manifest tools, one found by a glob relative to the config file and one
// by an absolute path, each pointed at a local provider, one verified by
// the config's trust. The tools are listed, documented and callable; each
// provider gets its key; and no
// response, and no line the server prints, holds either key, even when a
// provider echoes its key back.
func TestServerServesManifestTools(t *testing.T) {
	t.Parallel()
	openaqKey := randomKey(t, "openaq-secret-")
	tmdbKey := randomKey(t, "tmdb-secret-")
	openaq := newKeyEchoingProvider(t, "X-API-Key", openaqKey, "openaq-latest.json")
	tmdb := newKeyEchoingProvider(t, "Authorization", "Bearer "+tmdbKey, "tmdb-search-movie.json")

	dir := t.TempDir()
	writeManifest(t, dir, "tools/openaq-latest.json", exampleManifest(t, "openaq-latest.json"))
	movies, err := filepath.Abs(filepath.Join(examplesDir, "movie-search.json"))
	require.NoError(t, err)
	aliceKey := randomKey(t, "tg_test_alice_")
	config := writeManifest(t, dir, "toolgate.json", map[string]any{
		"listen":     "127.0.0.1:0",
		"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{aliceKey}}},
		"tools":      []string{"tools/*.json", movies},
		"upstreams":  map[string]string{"openaq-latest": openaq.URL, "movie-search": tmdb.URL},
		"trust":      map[string]any{"movie-search": map[string]any{"endpointVerified": true}},
	})
	srv, base := startServer(t, []string{"-config", config},
		"OPENAQ_API_KEY="+openaqKey, "TMDB_READ_ACCESS_TOKEN="+tmdbKey)
	alice := client{t: t, base: base, key: aliceKey}
	anonymous := client{t: t, base: base}

	var responses []response
	get := func(c client, path string) response {
		r := c.do(http.MethodGet, path, nil)
		responses = append(responses, r)
		return r
	}
	list := get(anonymous, "/v1/registry/tools").json(t)
	assert.EqualValues(t, 7, list["total"], "five built-in tools and two manifests")
	for _, slug := range []string{"openaq-latest", "movie-search"} {
		for _, path := range []string{"/v1/registry/tools/" + slug, "/v1/registry/tools/" + slug + "/docs",
			"/v1/registry/tools/" + slug + "/openapi.json", "/v1/registry/tools/" + slug + "/llms.txt",
			"/v1/registry/tools/" + slug + "/versions", "/tools/" + slug} {
			r := get(anonymous, path)
			assert.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
		}
	}
	get(anonymous, "/v1/registry/llms.txt")
	schema := get(anonymous, "/v1/registry/manifest.schema.json")
	assert.Equal(t, http.StatusOK, schema.status)

	quoteID, digest, q := alice.quote("openaq-latest")
	assert.Equal(t, "explicit_unverified", q["policy"].(map[string]any)["approval"].(map[string]any)["requirement"])
	r := alice.call("openaq-latest", quoteID, digest, "manifest-1", map[string]any{"locationId": 2178})
	responses = append(responses, r)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	exec := r.json(t)
	assert.Equal(t, "completed", exec["status"], "%s", r.body)
	assert.Len(t, exec["output"], 3)
	responses = append(responses, get(alice, "/v1/executions/"+exec["id"].(string)))

	quoteID, digest, q = alice.quote("movie-search")
	assert.Equal(t, "first_use", q["policy"].(map[string]any)["approval"].(map[string]any)["requirement"],
		"verified by the operator's trust config, the only way a manifest tool can be")
	r = alice.call("movie-search", quoteID, digest, "manifest-2", map[string]any{"query": "Spirited Away", "language": "en-US"})
	responses = append(responses, r)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"], "%s", r.body)

	// A provider echoing the key: the caller sees it redacted.
	quoteID, digest, _ = alice.quote("movie-search")
	r = alice.call("movie-search", quoteID, digest, "manifest-3", map[string]any{"query": "echo"})
	responses = append(responses, r)
	failed := r.json(t)
	assert.Equal(t, "failed", failed["status"], "%s", r.body)
	assert.Equal(t, "TMDB answered HTTP 401 Unauthorized; provider message: Invalid API key: Bearer [redacted]",
		failed["error"].(map[string]any)["message"])
	responses = append(responses, get(alice, "/v1/executions/"+failed["id"].(string)))
	assert.Equal(t, 0, srv.stop(exitTimeout))

	assert.Equal(t, []string{openaqKey}, openaq.sent())
	assert.Equal(t, []string{"Bearer " + tmdbKey, "Bearer " + tmdbKey}, tmdb.sent(), "the key, to its own provider only")
	for _, key := range []string{openaqKey, tmdbKey} {
		for _, r := range responses {
			var h bytes.Buffer
			require.NoError(t, r.header.Write(&h))
			assert.NotContains(t, string(r.body)+h.String(), key)
		}
		assert.NotContains(t, srv.stdout.String(), key)
		assert.NotContains(t, srv.stderr.String(), key)
	}
	srv.logLines()
}

// TestServerRefusesBadManifests: each kind of manifest mistake stops the
// server at start, exit 2, with one line naming the file, the JSON path
// and the reason.
func TestServerRefusesBadManifests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(d map[string]any)
		raw    string // the file's bytes, instead of a changed example
		env    []string
		path   string // the JSON path named; "" for the file as a whole
		reason string
	}{
		{name: "unknown field", change: func(d map[string]any) { d["owner"] = "ops" },
			path: "owner", reason: "is not a field of toolgate.tool/v1"},
		{name: "self-verification", change: func(d map[string]any) { d["endpoint"].(map[string]any)["verified"] = true },
			path: "endpoint.verified", reason: "a manifest cannot vouch for itself"},
		{name: "placeholder naming nothing", change: func(d map[string]any) {
			d["endpoint"].(map[string]any)["path"] = "/v3/locations/{location}/latest"
		}, path: "endpoint.path", reason: "{location} names no property of inputSchema (it has locationId)"},
		{name: "plain http origin", change: func(d map[string]any) { d["endpoint"].(map[string]any)["origin"] = "http://api.openaq.org" },
			path: "endpoint.origin", reason: "must use https"},
		{name: "invalid schema", change: func(d map[string]any) { d["outputSchema"].(map[string]any)["type"] = "list" },
			path: "outputSchema", reason: "is not a usable JSON Schema"},
		{name: "bad amount", change: func(d map[string]any) { d["pricing"] = map[string]any{"type": "per_call", "amount": "ten"} },
			path: "pricing.amount", reason: "must be a decimal amount in USD"},
		{name: "credential not set", change: func(d map[string]any) {}, env: []string{"OPENAQ_API_KEY="},
			path: "credential.env", reason: "the environment variable OPENAQ_API_KEY is empty"},
		{name: "credential file missing", change: func(d map[string]any) {
			d["credential"] = map[string]any{"header": "X-API-Key", "file": "/nonexistent/openaq.key"}
		}, path: "credential.file", reason: "cannot read /nonexistent/openaq.key: no such file"},
		{name: "a built-in's slug", change: func(d map[string]any) { d["slug"] = "earthquake-search" },
			path: "version", reason: "earthquake-search version 1 is already registered"},
		{name: "invalid JSON", raw: `{"schemaVersion": "toolgate.tool/v1",`, reason: "invalid JSON: the document is empty or cut short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var file string
			if tt.raw != "" {
				file = writeManifest(t, dir, "tools/bad.json", []byte(tt.raw))
			} else {
				doc := exampleManifest(t, "openaq-latest.json")
				tt.change(doc)
				file = writeManifest(t, dir, "tools/bad.json", doc)
			}
			config := writeManifest(t, dir, "toolgate.json", map[string]any{"tools": []string{"tools/*.json"}})
			env := tt.env
			if env == nil {
				env = []string{"OPENAQ_API_KEY=" + randomKey(t, "k")}
			}
			srv := startProcess(t, []string{"-config", config}, env...)
			assert.Equal(t, 2, srv.wait(exitTimeout))
			stderr := srv.stderr.String()
			want := "toolgate: " + file + ": "
			if tt.path != "" {
				want += tt.path + ": "
			}
			assert.True(t, strings.HasPrefix(stderr, want), "%q does not start with %q", stderr, want)
			assert.Contains(t, stderr, tt.reason)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			assert.True(t, strings.HasSuffix(stderr, "\n"))
			assert.Empty(t, srv.stdout.String(), "nothing listens")
		})
	}
}

// TestServerRefusesAGlobMatchingNothing: a "tools" pattern that finds no
// file is a config mistake, most likely a wrong directory.
func TestServerRefusesAGlobMatchingNothing(t *testing.T) {
	t.Parallel()
	config := writeManifest(t, t.TempDir(), "toolgate.json", map[string]any{"tools": []string{"tool/*.json"}})
	srv := startProcess(t, []string{"-config", config})
	assert.Equal(t, 2, srv.wait(exitTimeout))
	assert.Equal(t, "toolgate: "+config+`: config: tools[0]: "tool/*.json" matches no file (patterns are relative to the config file)`+"\n",
		srv.stderr.String())
}

// TestToolsCheckBinary: the built command checks manifests and exits 1
// when any is bad.
func TestToolsCheckBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(examplesDir, "air-quality.json")
	bad := exampleManifest(t, "air-quality.json")
	bad["pricing"] = map[string]any{"type": "free", "amount": "0.0100"}
	badPath := writeManifest(t, dir, "bad.json", bad)

	p := startProcess(t, []string{"tools", "check", good, badPath})
	assert.Equal(t, 1, p.wait(exitTimeout))
	assert.Equal(t, "air-quality 1 "+servedDigest(t, good, "")+"\n", p.stdout.String())
	assert.Equal(t, "toolgate: "+badPath+": pricing.amount: must be 0 (or left out) for a free tool\n", p.stderr.String())
}
