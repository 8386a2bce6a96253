package registry_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
)

// lockedBuffer collects log output written from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestManifestCredentialNeverLeaves walks every route a caller can reach
// for a manifest tool whose provider echoes the key back, with logs at
// debug level, and finds the key in no response and no log line; the
// provider, and only it, receives it.
func TestManifestCredentialNeverLeaves(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	status := http.StatusOK
	provider := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		key := r.Header.Get("X-API-Key")
		if status == http.StatusOK {
			answerJSON(200, `{"results":[{"sensor":"echo `+key+`","value":1}],"key":"`+key+`"}`)(w, r)
			return
		}
		answerJSON(status, `{"detail":"Invalid API key: `+key+`"}`)(w, r)
	})
	setStatus := func(s int) { mu.Lock(); status = s; mu.Unlock() }

	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := registry.New()
	tool, err := registry.ParseManifest("tools/station.json", []byte(baseManifest),
		parseOpts(map[string]string{"station-readings": provider.URL}))
	require.NoError(t, err)
	require.NoError(t, reg.Register(tool))
	require.NoError(t, reg.SetOrigin("station-readings", provider.URL))
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg, Logger: log})
	require.NoError(t, err)
	keys := httpapi.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", "tg_test_alice_key"))
	srv := httptest.NewServer(httpapi.NewHandler(gw, &httpapi.Options{Authenticator: keys, Logger: log}))
	defer srv.Close()

	var seen []string // every response, status line, headers and body
	do := func(method, path, body string, headers ...string) []byte {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tg_test_alice_key")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var h bytes.Buffer
		require.NoError(t, resp.Header.Write(&h))
		seen = append(seen, method+" "+path+" "+resp.Status+"\n"+h.String()+"\n"+string(b))
		return b
	}
	call := func(key, input string) []byte {
		q := do("POST", "/v1/tools/station-readings/quote", "{}")
		id := between(string(q), `"quote":{"id":"`, `"`)
		digest := between(string(q), `"manifestDigest":"`, `"`)
		return do("POST", "/v1/tools/station-readings/call",
			`{"quoteId":"`+id+`","input":`+input+`,"approval":{"manifestDigest":"`+digest+`"}}`, "Idempotency-Key", key)
	}

	for _, path := range []string{
		"/v1/registry/tools", "/v1/registry/tools?q=station", "/v1/registry/tools/station-readings",
		"/v1/registry/tools/station-readings/docs", "/v1/registry/tools/station-readings/openapi.json",
		"/v1/registry/tools/station-readings/llms.txt", "/v1/registry/tools/station-readings/versions",
		"/v1/registry/llms.txt", "/tools/station-readings", "/v1/registry/manifest.schema.json",
	} {
		do("GET", path, "")
	}
	completed := call("echo-1", `{"stationId":"S1"}`)
	assert.Contains(t, string(completed), `"status":"completed"`)
	assert.Contains(t, string(completed), `echo [redacted]`)
	execID := between(string(completed), `{"id":"`, `"`)
	do("GET", "/v1/executions/"+execID, "")
	call("echo-1", `{"stationId":"S1"}`) // a replay

	setStatus(http.StatusUnauthorized)
	failed := call("echo-2", `{"stationId":"S1"}`)
	assert.Contains(t, string(failed), "provider message: Invalid API key: [redacted]")
	call("bad-input", `{"stationId":""}`)
	call("injection", `{"stationId":"S1","units":"a\r\nb"}`)
	do("POST", "/v1/tools/no-such-tool/quote", "{}")

	for _, s := range seen {
		assert.NotContains(t, s, testSecret, "a response holds the key:\n%s", s)
	}
	assert.NotEmpty(t, logs.String())
	assert.NotContains(t, logs.String(), testSecret, "a log line holds the key")

	var sent int
	for _, r := range provider.requests() {
		if r.header.Get("X-API-Key") == testSecret {
			sent++
		}
	}
	assert.Equal(t, 2, sent, "the provider got the key on each of the two calls that reached it")
}

// between returns the text of s after the first start and before the next end.
func between(s, start, end string) string {
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, end)
	return v
}
