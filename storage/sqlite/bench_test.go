package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/storage/storagetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// BenchmarkQuoteCallSQLite measures quote+call pairs (one op is one pair) on
// a SQLite file, with storagetest.BenchCallers concurrent callers and the
// recorded USGS answer served at once: what is left is the gateway and its
// store.
func BenchmarkQuoteCallSQLite(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	storagetest.BenchQuoteCall(b, s, earthquakeBench())
}

// BenchmarkQuoteCallMemory is BenchmarkQuoteCallSQLite on the memory store,
// for comparison from the same run.
func BenchmarkQuoteCallMemory(b *testing.B) {
	storagetest.BenchQuoteCall(b, memory.New(), earthquakeBench())
}

// earthquakeBench is what this package's benchmarks call: earthquake-search,
// approved on every call, with the recorded answer.
func earthquakeBench() *storagetest.BenchConfig {
	return &storagetest.BenchConfig{
		Tool: tools.EarthquakeSearch(), Transport: recorded.Transport(), Input: []byte(`{"starttime":"2024-09-25"}`), Approve: true,
	}
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
