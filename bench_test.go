package toolgate_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/toolgatetype"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/spanbatch"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// The benchmarks here put the gateway's cost per call next to the floor:
// the work any gateway must do for the same call. BENCHMARKS.md has the
// commands, the machine and the figures.

const benchTool = "earthquake-search"

var benchInput = json.RawMessage(`{"starttime":"2024-09-25"}`)

// benchBody is the recorded ten-event USGS answer every benchmark call gets.
var benchBody = recorded.Body(recorded.USGSTenFeatures)

// newBenchGateway is a gateway over store with earthquake-search as its one
// tool, answered at once with benchBody.
func newBenchGateway(b *testing.B, store storage.Store) *toolgate.Gateway {
	b.Helper()
	return newBenchGatewayWith(b, store, toolgate.Config{})
}

// newObservedBenchGateway is newBenchGateway with metrics and tracing on,
// as the server runs them: every span sampled and handed to the server's
// batching processor (whose exporter here sends nowhere, so what is
// measured is the gateway's instrumentation, not a collector's network).
func newObservedBenchGateway(b *testing.B, store storage.Store) *toolgate.Gateway {
	b.Helper()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(spanbatch.New(tracetest.NewNoopExporter(), nil)),
		sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return newBenchGatewayWith(b, store, toolgate.Config{Metrics: prometheus.NewRegistry(), TracerProvider: tp})
}

// newRuledBenchGateway is newBenchGateway with twenty rules of the kinds
// an organization writes, none of which matches the benchmark's calls:
// every one is decided on each quote and call.
func newRuledBenchGateway(b *testing.B, store storage.Store) *toolgate.Gateway {
	b.Helper()
	return newBenchGatewayWith(b, store, toolgate.Config{Rules: benchRules()})
}

// benchRules are the twenty rules of rules/testdata/bench-rules.json, the
// kinds an organization writes (on arguments, costs, groups, claims,
// budgets, tools and time, deny and ask), none of which matches the
// benchmark's calls.
func benchRules() []rules.Rule {
	var rs []rules.Rule
	if err := json.Unmarshal(benchRulesJSON, &rs); err != nil {
		panic(err)
	}
	return rs
}

// benchRulesJSON is rules/testdata/bench-rules.json, built into the test
// binary so that it runs from any directory.
//
//go:embed rules/testdata/bench-rules.json
var benchRulesJSON []byte

func newBenchGatewayWith(b *testing.B, store storage.Store, cfg toolgate.Config) *toolgate.Gateway {
	b.Helper()
	reg := registry.New()
	if err := reg.Register(tools.EarthquakeSearch()); err != nil {
		b.Fatal(err)
	}
	cfg.Registry, cfg.Transport, cfg.SpendControls = reg, testproc.BodyTransport{Body: benchBody}, testproc.RaisedLimits{}
	gw, err := toolgate.New(store, &cfg)
	if err != nil {
		b.Fatal(err)
	}
	return gw
}

// quoteCall is one quote and the call under it, with the digest approved.
func quoteCall(ctx context.Context, gw *toolgate.Gateway, principal, key string) error {
	q, err := gw.Quote(ctx, principal, benchTool)
	if err != nil {
		return err
	}
	res, err := gw.Call(ctx, principal, toolgatetype.CallRequest{
		Tool: benchTool, QuoteID: q.Quote.ID, Input: benchInput,
		ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: key,
	})
	if err != nil {
		return err
	}
	if res.Execution.Status != toolgatetype.StatusCompleted {
		return fmt.Errorf("execution %s: %+v", res.Execution.Status, res.Execution.Error)
	}
	return nil
}

// BenchmarkQuoteCall is one quote and one call of earthquake-search on the
// memory store, each call with its own Idempotency-Key and the manifest
// digest approved. In parallel, each goroutine is its own principal. The
// observed variants run the same with Prometheus metrics and OpenTelemetry
// tracing on (see newObservedBenchGateway); the plain ones have both off.
func BenchmarkQuoteCall(b *testing.B) {
	for _, v := range []struct {
		name  string
		gw    func(*testing.B, storage.Store) *toolgate.Gateway
		bench func(*testing.B, *toolgate.Gateway)
	}{
		{"serial", newBenchGateway, benchQuoteCallSerial},
		{"serial-observed", newObservedBenchGateway, benchQuoteCallSerial},
		{"parallel", newBenchGateway, benchQuoteCallParallel},
		{"parallel-observed", newObservedBenchGateway, benchQuoteCallParallel},
		{"serial-rules", newRuledBenchGateway, benchQuoteCallSerial},
		{"parallel-rules", newRuledBenchGateway, benchQuoteCallParallel},
	} {
		b.Run(v.name, func(b *testing.B) { v.bench(b, v.gw(b, memory.New())) })
	}
}

// benchQuoteCallSerial makes one quote and call after another.
func benchQuoteCallSerial(b *testing.B, gw *toolgate.Gateway) {
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	defer testproc.ReportCPU(b)()
	for i := 0; i < b.N; i++ {
		if err := quoteCall(ctx, gw, "bench", "k-"+strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchQuoteCallParallel makes quotes and calls from every goroutine.
func benchQuoteCallParallel(b *testing.B, gw *toolgate.Gateway) {
	var callers atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	defer testproc.ReportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		principal := "bench-" + strconv.FormatInt(callers.Add(1), 10)
		for i := 0; pb.Next(); i++ {
			if err := quoteCall(ctx, gw, principal, "k-"+strconv.Itoa(i)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// floorExecution is an execution result as the call returns it, with the
// output still typed, so that it is encoded once.
type floorExecution struct {
	ID     string                       `json:"id"`
	Tool   toolgatetype.ToolRef         `json:"tool"`
	Status toolgatetype.Status          `json:"status"`
	Cost   toolgatetype.Cost            `json:"cost"`
	Output any                          `json:"output"`
	Error  *toolgatetype.ExecutionError `json:"error"`
}

// BenchmarkFloor is the work no gateway can avoid for the call
// BenchmarkQuoteCall makes: decode the upstream body into the tool's output
// shape with the tool's own normalizer, and encode the execution result once.
func BenchmarkFloor(b *testing.B) {
	tool := tools.EarthquakeSearch()
	ref := toolgatetype.ToolRef{ID: registry.StableID("tool:" + tool.Slug), Slug: tool.Slug, Name: tool.Name}
	header := http.Header{"Content-Type": {"application/json"}}
	floor := func() error {
		out, err := tool.Normalize(registry.UpstreamResponse{StatusCode: http.StatusOK, Header: header, Body: benchBody})
		if err != nil {
			return err
		}
		_, err = json.Marshal(floorExecution{
			ID: uuid.NewString(), Tool: ref, Status: toolgatetype.StatusCompleted,
			Cost:   toolgatetype.Cost{PriceUSD: "0.0000", FeeUSD: "0.0000", TotalUSD: "0.0000", Currency: "USD"},
			Output: out,
		})
		return err
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		defer testproc.ReportCPU(b)()
		for i := 0; i < b.N; i++ {
			if err := floor(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		defer testproc.ReportCPU(b)()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := floor(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// scaleEnv turns on the 1,000,000-record variant of BenchmarkQuoteCallScale,
// which takes a minute and about 2 GiB to set up.
const scaleEnv = "TOOLGATE_BENCH_1M"

// BenchmarkQuoteCallScale is BenchmarkQuoteCall (serial) on an empty memory
// store and on one already holding 1,000,000 finished calls (with their
// quotes, idempotency records, executions and ledger rows) from 10,000
// other principals over the last 23 hours. The second runs only with
// TOOLGATE_BENCH_1M=1; with -short, 10,000 records stand in for it. Each
// reports the median and 99th percentile of one pair's latency beside the
// mean.
func BenchmarkQuoteCallScale(b *testing.B) {
	records := 1_000_000
	if os.Getenv(scaleEnv) != "1" && testing.Short() {
		records = 10_000
	}
	for _, n := range []int{0, records} {
		b.Run("records="+strconv.Itoa(n), func(b *testing.B) {
			if n == 1_000_000 && os.Getenv(scaleEnv) != "1" {
				b.Skipf("set %s=1 to preload %d records", scaleEnv, n)
			}
			store := preloaded(b, n)
			gw := newBenchGateway(b, store)
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			// The store outlives one run of this function (the testing
			// package runs it more than once), so each run has its own keys.
			prefix := "k" + strconv.FormatInt(benchRuns.Add(1), 10) + "-"
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if err := quoteCall(ctx, gw, "bench", prefix+strconv.Itoa(i)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
			runtime.KeepAlive(store)
		})
	}
}

var (
	benchRuns      atomic.Int64
	preloadedMu    sync.Mutex
	preloadedStore = map[int]*memory.Store{}
)

// preloaded returns an empty store, or one holding n finished calls, built
// once per n and process: a million take a minute.
func preloaded(b *testing.B, n int) *memory.Store {
	if n == 0 {
		return memory.New()
	}
	preloadedMu.Lock()
	defer preloadedMu.Unlock()
	if s := preloadedStore[n]; s != nil {
		return s
	}
	s := memory.New()
	preload(b, s, n)
	preloadedStore[n] = s
	return s
}

// preload stores n finished calls through the Store interface, oldest
// first (the memory store keeps its queues in time order), spread over
// 10,000 principals and the last 23 hours. Their stored response is a
// short execution body: the point is the number of records, and 1M full
// ten-event results would need 3 GiB.
func preload(b *testing.B, store storage.Store, n int) {
	b.Helper()
	if n == 0 {
		return
	}
	const principals = 10_000
	ctx := context.Background()
	resp := []byte(`{"id":"00000000-0000-0000-0000-000000000000","tool":{"id":"x","slug":"earthquake-search","name":"Earthquake Search"},` +
		`"status":"completed","cost":{"priceUsd":"0.0000","feeUsd":"0.0000","totalUsd":"0.0000","currency":"USD"},` +
		`"output":{"type":"FeatureCollection","metadata":{"count":0,"title":"USGS Earthquakes","status":200},"features":[]},"error":null}`)
	// The collector would otherwise mark the growing store over and over
	// while it is being filled.
	defer debug.SetGCPercent(debug.SetGCPercent(1000))
	toolID := registry.StableID("tool:" + benchTool)
	span := 23 * time.Hour
	start := time.Now().Add(-span)
	step := span / time.Duration(n)
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(i) * step)
		principal := "p-" + strconv.Itoa(i%principals)
		key := "pre-" + strconv.Itoa(i)
		q := storage.Quote{
			ID: uuid.New(), Principal: principal, ToolID: toolID, ToolSlug: benchTool, ToolVersion: 1,
			CreatedAt: at, ExpiresAt: at.Add(toolgate.DefaultQuoteTTL), State: storage.QuoteOpen,
		}
		if err := store.CreateQuote(ctx, q); err != nil {
			b.Fatal(err)
		}
		exec, lease := uuid.New(), uuid.New()
		if _, err := store.BeginExecution(ctx, storage.Begin{
			Principal: principal, Key: key, Fingerprint: key, QuoteID: q.ID, ExecutionID: exec, ToolID: toolID,
			LeaseToken: lease, LeaseUntil: at.Add(time.Minute), Now: at,
		}); err != nil {
			b.Fatal(err)
		}
		if err := store.FinishExecution(ctx, storage.Finish{
			Principal: principal, Key: key, ExecutionID: exec, LeaseToken: lease,
			Status: storage.ExecutionCompleted, Charged: true, Response: resp, Now: at,
		}); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC() // the setup's garbage is not the benchmark's
}

// reportPercentiles adds the median and 99th percentile of lat to the
// benchmark's figures.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
}

// BenchmarkRegistryList lists and searches a registry of 10,000 tools (200
// with -short, whose setup is quick) the way GET /v1/registry/tools does: a
// page of 20 entries with their usage. It reports the median and 99th
// percentile of one listing.
func BenchmarkRegistryList(b *testing.B) {
	n := 10_000
	if testing.Short() {
		n = 200
	}
	gw := scaleRegistryGateway(b, n)
	for _, c := range []struct{ name, q string }{
		{"all", ""},
		{"search-category", "finance"}, // a tenth of the tools
		{"search-rare", "tool 42"},     // one tool, or 11 of 10,000
		{"search-none", "no such tool"},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, _, err := gw.List(ctx, c.q, 20, 0, toolgatetype.EntryOptions{}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

var (
	scaleRegistryMu sync.Mutex
	scaleRegistries = map[int]*toolgate.Gateway{}
)

// scaleRegistryGateway is a gateway over a registry of n copies of
// earthquake-search under other slugs, names and categories, every one of
// them used once, so that listings carry usage. Registering compiles each
// tool's schemas and digests its manifest, about 2 ms a tool here, so the
// gateway is built once per n and process.
func scaleRegistryGateway(b *testing.B, n int) *toolgate.Gateway {
	b.Helper()
	scaleRegistryMu.Lock()
	defer scaleRegistryMu.Unlock()
	if gw := scaleRegistries[n]; gw != nil {
		return gw
	}
	reg := registry.New()
	categories := []string{"Data", "Finance", "Weather", "Sports", "Travel", "Health", "Media", "Maps", "Science", "Text"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		t := tools.EarthquakeSearch()
		t.Slug = "tool-" + strconv.Itoa(i)
		t.Name = "Tool " + strconv.Itoa(i)
		t.Description = "Benchmark tool number " + strconv.Itoa(i)
		t.Category = categories[i%len(categories)]
		t.Endpoint.Verified = i%7 == 0
		t.UpdatedAt = base.Add(time.Duration(i) * time.Minute)
		if err := reg.Register(t); err != nil {
			b.Fatal(err)
		}
	}
	store := memory.New()
	ctx := context.Background()
	now := time.Now()
	versions, _ := reg.List("", n, 0)
	for _, v := range versions {
		q := storage.Quote{ID: uuid.New(), Principal: "p", ToolID: v.Tool.ID, CreatedAt: now, ExpiresAt: now.Add(time.Minute), State: storage.QuoteOpen}
		exec, lease := uuid.New(), uuid.New()
		if err := store.CreateQuote(ctx, q); err != nil {
			b.Fatal(err)
		}
		if _, err := store.BeginExecution(ctx, storage.Begin{Principal: "p", Key: v.Tool.Slug, Fingerprint: "f", QuoteID: q.ID,
			ExecutionID: exec, ToolID: v.Tool.ID, LeaseToken: lease, LeaseUntil: now.Add(time.Minute), Now: now}); err != nil {
			b.Fatal(err)
		}
		if err := store.FinishExecution(ctx, storage.Finish{Principal: "p", Key: v.Tool.Slug, ExecutionID: exec, LeaseToken: lease,
			Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{}`), Now: now}); err != nil {
			b.Fatal(err)
		}
	}
	gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: testproc.BodyTransport{Body: benchBody}})
	if err != nil {
		b.Fatal(err)
	}
	scaleRegistries[n] = gw
	return gw
}
