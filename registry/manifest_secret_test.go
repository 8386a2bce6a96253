package registry_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetype"
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
// debug level, metrics and traces on, and finds the key in no response, no
// log line, no metric, no span and no stored record; the provider, and
// only it, receives it.
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
	metrics := prometheus.NewRegistry()
	spans := tracetest.NewInMemoryExporter()
	store := memory.New()
	gw, err := toolgate.New(store, &toolgate.Config{
		Registry: reg, Logger: log, Metrics: metrics,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
	})
	require.NoError(t, err)
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", "tg_test_alice_key"))
	srv := httptest.NewServer(toolgatehttp.NewHandler(gw, &toolgatehttp.Options{Authenticator: keys, Logger: log}))
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

	// The metrics as a scrape shows them, and every span with all it holds.
	families, err := metrics.Gather()
	require.NoError(t, err)
	require.NotEmpty(t, families)
	var scrape bytes.Buffer
	for _, f := range families {
		_, err := expfmt.MetricFamilyToText(&scrape, f)
		require.NoError(t, err)
	}
	assert.NotContains(t, scrape.String(), testSecret, "a metric holds the key")
	require.NotEmpty(t, spans.GetSpans())
	for _, sp := range spans.GetSpans() {
		dump := fmt.Sprintf("%s %v %v %v %v", sp.Name, sp.Attributes, sp.Events, sp.Status, sp.Links)
		assert.NotContains(t, dump, testSecret, "a span holds the key: %s", dump)
	}

	// What the store keeps of each call: its idempotency record and its
	// execution, responses included, and the audit listing.
	ctx := t.Context()
	for _, key := range []string{"echo-1", "echo-2"} {
		rec, err := store.GetIdempotency(ctx, "alice", key)
		require.NoError(t, err)
		assert.NotContains(t, fmt.Sprintf("%+v %s", rec, rec.Response), testSecret, "the record of %s holds the key", key)
		exec, err := store.GetExecution(ctx, rec.ExecutionID)
		require.NoError(t, err)
		assert.NotContains(t, fmt.Sprintf("%+v %s", exec, exec.Response), testSecret, "the execution of %s holds the key", key)
	}
	page, err := gw.ListExecutions(ctx, "alice", toolgatetype.ExecutionFilter{})
	require.NoError(t, err)
	require.NotEmpty(t, page.Executions)
	assert.NotContains(t, fmt.Sprintf("%+v", page), testSecret, "the audit listing holds the key")

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
