package toolgatetest

import (
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// BenchCallers is how many callers BenchQuoteCall runs at once, each as its
// own principal, so that no one principal's admission serializes them all.
const BenchCallers = 16

// BenchConfig is what BenchQuoteCall calls, and how it names and counts.
type BenchConfig struct {
	// Tool is the tool quoted and called; required.
	Tool *registry.Tool
	// Transport serves the tool's provider; required. It should answer at
	// once, so that what is measured is the gateway and its store.
	Transport http.RoundTripper
	// Input is each call's input.
	Input json.RawMessage
	// Approve sends the quote's manifest digest with each call, as a caller
	// of a tool that asks for approval does.
	Approve bool
	// Principal names caller i, from 0 to BenchCallers-1; nil names them
	// "caller-0" onwards.
	Principal func(i int) string
	// RoundTrips, when set, counts the store's round trips to its
	// database. It is zeroed once the gateway is set up (the migrations do
	// not count) and reported per pair.
	RoundTrips *atomic.Int64
	// Budgets, when set, are the gateway's budgets (Config.Budgets), for
	// the cost of calls that count in them.
	Budgets []toolgatetype.BudgetDefinition
}

// BenchQuoteCall measures quote+call pairs (one op is one pair) through a
// gateway over store, with BenchCallers concurrent callers and every limit
// measured on every call: the operator raises them all out of reach, so
// calls are admitted rather than refused. Beside ns/op it reports pairs/s,
// cpu-ns/op (the whole process's CPU per pair, the steadier figure on a
// shared machine), latency-µs (the mean time one caller waits for one pair,
// which it also returns) and, given RoundTrips, roundtrips/op.
func BenchQuoteCall(b *testing.B, store storage.Store, cfg *BenchConfig) (latencyMicros float64) {
	b.Helper()
	if cfg == nil || cfg.Tool == nil || cfg.Transport == nil {
		b.Fatal("toolgatetest: BenchQuoteCall needs a Tool and its Transport")
	}
	principal := cfg.Principal
	if principal == nil {
		principal = func(i int) string { return "caller-" + strconv.Itoa(i) }
	}
	reg := registry.New()
	if err := reg.Register(cfg.Tool); err != nil {
		b.Fatal(err)
	}
	gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: cfg.Transport, SpendControls: testproc.RaisedLimits{},
		Budgets: cfg.Budgets})
	if err != nil {
		b.Fatal(err)
	}
	slug := cfg.Tool.Slug
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((BenchCallers + procs - 1) / procs)
	var (
		callers atomic.Int64
		waited  atomic.Int64 // nanoseconds, summed over pairs
	)
	b.ReportAllocs()
	b.ResetTimer()
	if cfg.RoundTrips != nil {
		cfg.RoundTrips.Store(0)
	}
	cpu := testproc.ProcessCPU()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		who := principal(int(callers.Add(1) - 1))
		for i := 0; pb.Next(); i++ {
			start := time.Now()
			q, err := gw.Quote(ctx, who, slug)
			if err != nil {
				b.Error(err)
				return
			}
			req := toolgatetype.CallRequest{Tool: slug, QuoteID: q.Quote.ID, Input: cfg.Input, IdempotencyKey: strconv.Itoa(i)}
			if cfg.Approve && q.Quote.ManifestDigest != nil {
				req.ApprovalDigest = *q.Quote.ManifestDigest
			}
			res, err := gw.Call(ctx, who, req)
			if err != nil {
				b.Error(err)
				return
			}
			if res.Execution.Status != toolgatetype.StatusCompleted {
				b.Errorf("execution %s: %+v", res.Execution.Status, res.Execution.Error)
				return
			}
			waited.Add(int64(time.Since(start)))
		}
	})
	b.StopTimer()
	if n := callers.Load(); n < BenchCallers {
		b.Fatalf("%d callers ran, want %d", n, BenchCallers)
	}
	latencyMicros = float64(waited.Load()) / float64(b.N) / 1e3
	b.ReportMetric(float64(testproc.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(latencyMicros, "latency-µs")
	if cfg.RoundTrips != nil {
		b.ReportMetric(float64(cfg.RoundTrips.Load())/float64(b.N), "roundtrips/op")
	}
	return latencyMicros
}
