package sqlite_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// BenchmarkQuoteCallSQLite measures quote+call pairs (one op is one pair) on
// a SQLite file, with toolgatetest.BenchCallers concurrent callers and the
// recorded USGS answer served at once: what is left is the gateway and its
// store.
func BenchmarkQuoteCallSQLite(b *testing.B) {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	toolgatetest.BenchQuoteCall(b, s, earthquakeBench())
}

// signedSeal seals a receipt of f of the size a gateway's is.
func signedSeal(signer *receipt.Signer, f storage.Finish) storage.Seal {
	return func(seq int64, prev string) (storage.Sealed, error) {
		digest := "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		r := toolgatetype.Receipt{
			SchemaVersion: toolgatetype.ReceiptSchemaVersion,
			ExecutionID:   f.ExecutionID.String(),
			Principal:     f.Principal,
			Tool:          toolgatetype.ReceiptTool{Slug: "earthquake-search", ManifestDigest: "sha256:" + digest},
			QuoteID:       f.ExecutionID.String(),
			InputSHA256:   digest,
			OutputSHA256:  &digest,
			Status:        toolgatetype.StatusCompleted,
			Cost:          toolgatetype.ReceiptCost{PriceUSD: "0.0100", FeeUSD: "0.0010", TotalUSD: "0.0110"},
			Approval:      toolgatetype.ReceiptApproval{Kind: toolgatetype.ApprovalKindDigest},
			CreatedAt:     f.Now,
			FinishedAt:    f.Now,
			Seq:           seq,
		}
		if prev != "" {
			r.Prev = &prev
		}
		signed, hash := signer.Sign(&r)
		return storage.Sealed{Receipt: signed, Hash: hash}, nil
	}
}

// BenchmarkFinish measures FinishExecution alone, with and without a
// signed receipt: toolgatetest.BenchCallers callers at once, each finishing
// calls of its own principal admitted before the timer starts. The writer
// runs one write at a time, so what a finish does inside its write, such as
// signing, is time every other write waits.
func BenchmarkFinish(b *testing.B) {
	for _, sealed := range []bool{false, true} {
		name := "plain"
		if sealed {
			name = "sealed"
		}
		b.Run(name, func(b *testing.B) {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			signer, err := receipt.GenerateSigner()
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			callers := toolgatetest.BenchCallers
			per := (b.N + callers - 1) / callers
			begins := make([][]storage.Begin, callers)
			var wg sync.WaitGroup
			for c := range callers {
				wg.Go(func() {
					for i := range per {
						q := quoteFor("caller-"+strconv.Itoa(c), "tool-a", "0.0110", t0)
						bg := beginFor(q, strconv.Itoa(i), t0)
						if err := errors.Join(s.CreateQuote(ctx, q), func() error { _, err := s.BeginExecution(ctx, bg); return err }()); err != nil {
							b.Error(err)
							return
						}
						begins[c] = append(begins[c], bg)
					}
				})
			}
			wg.Wait()
			resp := `{"output":"` + strings.Repeat("x", 1024) + `"}`
			b.ReportAllocs()
			b.ResetTimer()
			cpu := testproc.ProcessCPU()
			for c := range callers {
				wg.Go(func() {
					for _, bg := range begins[c] {
						f := finishFor(bg, storage.ExecutionCompleted, resp, t0)
						if sealed {
							f.Seal = signedSeal(signer, f)
						}
						if err := s.FinishExecution(ctx, f); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(testproc.ProcessCPU()-cpu)/float64(callers*per), "cpu-ns/op")
		})
	}
}

// BenchmarkQuoteCallMemory is BenchmarkQuoteCallSQLite on the memory store,
// for comparison from the same run.
func BenchmarkQuoteCallMemory(b *testing.B) {
	toolgatetest.BenchQuoteCall(b, memory.New(), earthquakeBench())
}

// earthquakeBench is what this package's benchmarks call: earthquake-search,
// approved on every call, with the recorded answer.
func earthquakeBench() *toolgatetest.BenchConfig {
	return &toolgatetest.BenchConfig{
		Tool: tools.EarthquakeSearch(), Transport: recorded.Transport(), Input: []byte(`{"starttime":"2024-09-25"}`), Approve: true,
	}
}

// BenchmarkReads measures the reads that start a call as the gateway makes
// them (ReadBatch, method by method on the read pool), beside one read
// alone; cpu-ns/op is the steadier figure on a shared machine. It is the
// evidence for doing ReadBatch with storage.ReadEach: doing the reads in one
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
		measure(b, func() error { _, err := s.ReadBatch(ctx, reads); return err })
	})
	b.Run("one", func(b *testing.B) {
		measure(b, func() error { _, err := s.GetQuote(ctx, q.ID); return err })
	})
}
