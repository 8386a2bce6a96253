package main

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/recorded"
)

// otlpReceiver collects what an OTLP/HTTP exporter sends to /v1/traces.
type otlpReceiver struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/traces" {
		o.mu.Lock()
		o.bodies = append(o.bodies, body)
		o.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
}

func (o *otlpReceiver) received() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	for _, body := range o.bodies {
		b.Write(body)
	}
	return b.String()
}

// TestServerMetricsTracesAndAudit runs the built server with metricsListen
// and an OTLP endpoint: Prometheus scrapes /metrics on the metrics address
// (and finds it nowhere on the API's), the spans reach the collector, and
// the audit routes list the call. No key, principal or input value appears
// in the metrics or the spans.
func TestServerMetricsTracesAndAudit(t *testing.T) {
	t.Parallel()
	providers := httptest.NewServer(recorded.Handler())
	defer providers.Close()
	collector := &otlpReceiver{}
	otlp := httptest.NewServer(collector)
	defer otlp.Close()

	key := randomKey(t, "tg_test_metrics_")
	principal := randomKey(t, "observed-")
	path := writeConfig(t, map[string]any{
		"listen":        "127.0.0.1:0",
		"metricsListen": "127.0.0.1:0",
		"retention":     "48h",
		"principals":    []any{map[string]any{"id": principal, "apiKeys": []string{key}}},
		"upstreams":     upstreamsAt(providers.URL, providers.URL),
	})
	srv, base := startServer(t, []string{"-config", path},
		"OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.URL, "OTEL_BSP_SCHEDULE_DELAY=50")
	metricsURL := strings.TrimPrefix(srv.waitLine("toolgate metrics on ", 10*time.Second), "toolgate metrics on ")
	require.True(t, strings.HasSuffix(metricsURL, "/metrics"), metricsURL)
	require.NotEqual(t, base+"/metrics", metricsURL)

	c := client{t: t, base: base, key: key}
	quoteID, digest, _ := c.quote("earthquake-search")
	const magnitude = 4.321 // a distinctive input value
	r := c.call("earthquake-search", quoteID, digest, "observed-1", map[string]any{"starttime": "2024-09-25", "minmagnitude": magnitude})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	execID := r.header.Get("Toolgate-Execution-Id")

	// Prometheus' scrape, on the metrics address.
	resp, err := http.Get(metricsURL)
	require.NoError(t, err)
	scraped, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	metrics := string(scraped)
	for _, line := range []string{
		`toolgate_quotes_total{tool="earthquake-search"} 1`,
		`toolgate_calls_total{outcome="completed",tool="earthquake-search"} 1`,
		`toolgate_upstream_attempts_total{result="ok",tool="earthquake-search"} 1`,
		`toolgate_call_duration_seconds_count{tool="earthquake-search"} 1`,
		`toolgate_upstream_duration_seconds_count{tool="earthquake-search"} 1`,
		`toolgate_charged_usd_total{tool="earthquake-search"} 0`,
		`toolgate_circuit_open{tool="earthquake-search"} 0`,
	} {
		assert.Contains(t, metrics, line+"\n")
	}
	assert.Contains(t, metrics, "go_goroutines ")
	assert.Contains(t, metrics, "process_cpu_seconds_total ")
	for _, secret := range []string{key, principal, quoteID, execID, "4.321"} {
		assert.NotContains(t, metrics, secret)
	}

	// Not on the API's address.
	r = c.do(http.MethodGet, "/metrics", nil)
	assert.Equal(t, http.StatusNotFound, r.status)

	// The audit trail lists the call; the spend summary counts it.
	r = c.do(http.MethodGet, "/v1/executions?tool=earthquake-search", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	items := r.json(t)["executions"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, execID, items[0].(map[string]any)["id"])
	r = c.do(http.MethodGet, "/v1/spend?groupBy=day", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.EqualValues(t, 1, r.json(t)["groups"].([]any)[0].(map[string]any)["count"])

	// Stopping sends the last spans.
	require.Equal(t, 0, srv.stop(exitTimeout))
	spans := collector.received()
	for _, name := range []string{"quote earthquake-search", "execute_tool earthquake-search", "gen_ai.tool.call.id", execID, "toolgate"} {
		assert.Contains(t, spans, name, "the collector received it")
	}
	for _, secret := range []string{key, principal, "4.321"} {
		assert.NotContains(t, spans, secret)
	}

	var finished map[string]any
	for _, rec := range srv.logLines() {
		if rec["msg"] == "call finished" {
			finished = rec
		}
	}
	require.NotNil(t, finished, "a log line for the finished call")
	assert.Equal(t, execID, finished["execution"])
	assert.Equal(t, principal, finished["principal"])
	assert.Equal(t, "completed", finished["executionStatus"])
	assert.EqualValues(t, 200, finished["upstreamStatus"])
	assert.NotContains(t, srv.stderr.String(), key)
	assert.NotContains(t, srv.stderr.String(), "4.321")
}

// traceparentHeader sends one traceparent with every request of an MCP
// client, as a traced agent would, with a caller's key.
type traceparentHeader struct{ key, traceparent string }

func (h traceparentHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+h.key)
	r.Header.Set("Traceparent", h.traceparent)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPSpansReachTheCollector: with an OTLP endpoint, each MCP request
// is a span, over streamable HTTP (continuing the caller's traceparent)
// and over stdio alike, and the gateway's execute_tool span is in the same
// trace. No key or argument value is in any span.
func TestMCPSpansReachTheCollector(t *testing.T) {
	t.Parallel()
	const magnitude = 4.321 // a distinctive argument value
	args := map[string]any{"starttime": "2024-09-25", "minmagnitude": magnitude}
	otlpEnv := func(collector *otlpReceiver) []string {
		otlp := httptest.NewServer(collector)
		t.Cleanup(otlp.Close)
		return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL, "OTEL_BSP_SCHEDULE_DELAY=50"}
	}

	t.Run("streamable HTTP", func(t *testing.T) {
		t.Parallel()
		collector := &otlpReceiver{}
		key := randomKey(t, "tg_test_mcp_traced_")
		path := writeConfig(t, map[string]any{
			"listen":     "127.0.0.1:0",
			"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{key}}},
		})
		srv, base := startServer(t, []string{"-config", path, "-offline"}, otlpEnv(collector)...)
		const traceID = "5e1f0c2ab7d94e36a08c4f7b21d39e6a"
		transport := &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: traceparentHeader{key, "00-" + traceID + "-3c2b7f9e1d0a4b58-01"}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: (&agent{}).elicit}).
			Connect(context.Background(), transport, nil)
		require.NoError(t, err)
		completed(t, mcpCall(t, cs, "earthquake-search", args, nil))
		require.NoError(t, cs.Close())
		require.Equal(t, 0, srv.stop(exitTimeout))

		spans := collector.received()
		// Protocol 2026-07-28: no session, each request standing alone.
		for _, want := range []string{"tools/call earthquake-search", "execute_tool earthquake-search", "mcp.protocol.version", string(mustHex(t, traceID))} {
			assert.Contains(t, spans, want, "the collector received it")
		}
		assert.NotContains(t, spans, key)
		assert.NotContains(t, spans, "4.321")
	})

	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		collector := &otlpReceiver{}
		cmd := exec.Command(toolgateBinary(t), "mcp", "-offline")
		cmd.Env = append(os.Environ(), otlpEnv(collector)...)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: (&agent{}).elicit}).
			Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err)
		completed(t, mcpCall(t, cs, "earthquake-search", args, nil))
		require.NoError(t, cs.Close()) // the process exits, sending its last spans
		assert.Equal(t, 0, cmd.ProcessState.ExitCode())

		spans := collector.received()
		for _, want := range []string{"tools/call earthquake-search", "execute_tool earthquake-search", "mcp.method.name"} {
			assert.Contains(t, spans, want, "the collector received it")
		}
		assert.NotContains(t, spans, "4.321")
	})
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}
