package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolgate/toolgate/internal/spanbatch"
	"github.com/toolgate/toolgate/mcpserver"
)

// telemetryFlushTimeout bounds sending the last spans at exit.
const telemetryFlushTimeout = 5 * time.Second

// telemetry is what the server reports through: a Prometheus registry when
// metricsListen is set, and an OpenTelemetry tracer provider exporting OTLP
// over HTTP when the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set. Either may be nil: off.
type telemetry struct {
	metrics *prometheus.Registry
	tracing *sdktrace.TracerProvider
}

// newTelemetry sets up what cfg and the environment ask for. The exporter
// reads the rest of the standard OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, compression) and OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES
// itself; the service is named toolgate unless they say otherwise. Spans
// are batched by spanbatch, which reads the OTEL_BSP_* variables as the
// SDK's batch processor would, without its goroutine handoff per span.
func newTelemetry(ctx context.Context, cfg *Config, getenv func(string) string) (*telemetry, error) {
	t := &telemetry{}
	if cfg.MetricsListen != "" {
		t.metrics = prometheus.NewRegistry()
		t.metrics.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	}
	if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return t, nil
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "toolgate")),
		resource.WithFromEnv(), // after the name, so OTEL_SERVICE_NAME wins
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, err
	}
	t.tracing = sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(spanbatch.New(exporter, batchOptions(getenv))),
		sdktrace.WithResource(res))
	return t, nil
}

// batchOptions reads the standard OTEL_BSP_* variables, as the SDK's batch
// processor would: delays and timeouts in milliseconds, sizes as counts. A
// value that is not a positive whole number leaves the default.
func batchOptions(getenv func(string) string) *spanbatch.Options {
	number := func(name string) int {
		n, err := strconv.Atoi(getenv(name))
		if err != nil || n <= 0 {
			return 0
		}
		return n
	}
	return &spanbatch.Options{
		ScheduleDelay:      time.Duration(number("OTEL_BSP_SCHEDULE_DELAY")) * time.Millisecond,
		ExportTimeout:      time.Duration(number("OTEL_BSP_EXPORT_TIMEOUT")) * time.Millisecond,
		MaxQueueSize:       number("OTEL_BSP_MAX_QUEUE_SIZE"),
		MaxExportBatchSize: number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
	}
}

// traced wraps the API in a server span per request, continuing the
// caller's trace when it sends a traceparent. The span is named by the
// method alone: the path holds ids.
func (t *telemetry) traced(h http.Handler) http.Handler {
	if t.tracing == nil {
		return h
	}
	return otelhttp.NewHandler(h, "toolgate",
		otelhttp.WithTracerProvider(t.tracing),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	)
}

// mcpOptions gives the MCP server the tracer provider, when tracing: each
// MCP request is then a span, parent of the gateway's spans for it.
func (t *telemetry) mcpOptions(o *mcpserver.Options) *mcpserver.Options {
	// An interface holding a nil pointer would not be nil: set only when on.
	if t.tracing != nil {
		o.TracerProvider = t.tracing
	}
	return o
}

// serveMetrics answers GET /metrics on ln until ctx is done. It is the
// only thing served there, and the API's address never serves it. A
// failure is logged, and returned.
func (t *telemetry) serveMetrics(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(t.metrics, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      readTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		<-ctx.Done()
		stop, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(stop)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Error("metrics listener stopped", "error", err)
		return err
	}
	return nil
}

// close sends the spans still buffered and stops the exporter.
func (t *telemetry) close(log *slog.Logger) {
	if t.tracing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	if err := t.tracing.Shutdown(ctx); err != nil {
		log.Warn("could not send the last spans", "error", err)
	}
}
