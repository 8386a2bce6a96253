package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// benchCallers is how many callers quote and call at once, each as its own
// principal.
const benchCallers = 16

// BenchmarkQuoteCallSQLite measures quote+call pairs (one op is one pair) on
// a SQLite file, with benchCallers concurrent callers and the recorded USGS
// answer served at once: what is left is the gateway and its store.
func BenchmarkQuoteCallSQLite(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	benchmarkQuoteCall(b, s)
}

// BenchmarkQuoteCallMemory is BenchmarkQuoteCallSQLite on the memory store,
// for comparison from the same run.
func BenchmarkQuoteCallMemory(b *testing.B) {
	benchmarkQuoteCall(b, memory.New())
}

// benchmarkQuoteCall reports pairs/s beside ns/op, and the mean time one
// caller waits for one pair (latency-µs).
func benchmarkQuoteCall(b *testing.B, store storage.Store) {
	reg := registry.New()
	if err := reg.Register(tools.EarthquakeSearch()); err != nil {
		b.Fatal(err)
	}
	gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: recorded.Transport(), SpendControls: testproc.RaisedLimits{}})
	if err != nil {
		b.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((benchCallers + procs - 1) / procs)
	var (
		callers atomic.Int64
		waited  atomic.Int64 // nanoseconds, summed over pairs
	)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testproc.ProcessCPU()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		who := "caller-" + strconv.Itoa(int(callers.Add(1)))
		for i := 0; pb.Next(); i++ {
			start := time.Now()
			q, err := gw.Quote(ctx, who, "earthquake-search")
			if err != nil {
				b.Error(err)
				return
			}
			res, err := gw.Call(ctx, who, toolgatetype.CallRequest{
				Tool: "earthquake-search", QuoteID: q.Quote.ID, Input: []byte(`{"starttime":"2024-09-25"}`),
				IdempotencyKey: strconv.Itoa(i), ApprovalDigest: *q.Quote.ManifestDigest,
			})
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
	b.ReportMetric(float64(testproc.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(waited.Load())/float64(b.N)/1e3, "latency-µs")
}

// BenchmarkReads measures the reads that start a call as the gateway makes
// them (storage.ReadBatch, method by method on the read pool), beside one
// read alone; cpu-ns/op is the steadier figure on a shared machine. It is
// the evidence for leaving storage.BatchReader out: doing the reads in one
// read transaction on one connection saves no round trip in process, and
// measured no less CPU than this.
func BenchmarkReads(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ctx := b.Context()
	q := quoteFor("alice", "tool-a", "0.11", t0)
	daily := dec("25.0000")
	if err := errors.Join(
		s.CreateQuote(ctx, q),
		s.PutSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &daily}),
		s.PutApproval(ctx, storage.Approval{Principal: "alice", ToolID: "tool-a", ManifestDigest: "d", Mode: toolgatetype.ApprovalNeverAsk, UpdatedAt: t0}),
	); err != nil {
		b.Fatal(err)
	}
	measure := func(b *testing.B, read func() error) {
		cpu := testproc.ProcessCPU()
		for b.Loop() {
			if err := read(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(testproc.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
	}
	reads := storage.Reads{Principal: "alice", QuoteID: q.ID, SpendControls: true, Approval: true, ToolID: "tool-a"}
	b.Run("call", func(b *testing.B) {
		measure(b, func() error { _, err := storage.ReadBatch(ctx, s, reads); return err })
	})
	b.Run("one", func(b *testing.B) {
		measure(b, func() error { _, err := s.GetQuote(ctx, q.ID); return err })
	})
}
