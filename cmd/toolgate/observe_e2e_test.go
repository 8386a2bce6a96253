package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

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
