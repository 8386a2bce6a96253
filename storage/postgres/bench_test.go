package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/storage/postgres"
)

// benchCallers is how many callers quote and call at once, each as its own
// principal, so that no one principal's admission lock serializes them all.
const benchCallers = 16

// BenchmarkQuoteCallPostgres measures quote+call pairs (one op is one pair)
// on PostgreSQL, with benchCallers concurrent callers and a provider that
// answers at once: what is left is the gateway and its store.
func BenchmarkQuoteCallPostgres(b *testing.B) {
	store, trips := benchPostgresStore(b)
	benchmarkQuoteCall(b, store, trips)
}

// BenchmarkQuoteCallMemory is BenchmarkQuoteCallPostgres on the memory
// store, for comparison from the same run.
func BenchmarkQuoteCallMemory(b *testing.B) {
	benchmarkQuoteCall(b, memory.New(), nil)
}

// benchmarkQuoteCall reports pairs/s beside ns/op, and, given the store's
// round-trip counter, the round trips to the database per pair.
func benchmarkQuoteCall(b *testing.B, store storage.Store, trips *roundTrips) {
	reg := registry.New()
	if err := reg.Register(echoTool()); err != nil {
		b.Fatal(err)
	}
	gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: &provider{}, SpendControls: noLimits{}})
	if err != nil {
		b.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((benchCallers + procs - 1) / procs)
	var callers atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	if trips != nil {
		trips.n.Store(0) // not the migrations
	}
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		principal := fmt.Sprintf("caller-%d", callers.Add(1))
		for i := 0; pb.Next(); i++ {
			q, err := gw.Quote(ctx, principal, "echo")
			if err != nil {
				b.Error(err)
				return
			}
			res, err := gw.Call(ctx, principal, toolgate.CallRequest{
				Tool: "echo", QuoteID: q.Quote.ID, Input: []byte(`{"v":"hello"}`), IdempotencyKey: strconv.Itoa(i),
			})
			if err != nil {
				b.Error(err)
				return
			}
			if res.Execution.Status != toolgate.StatusCompleted {
				b.Errorf("execution %s: %+v", res.Execution.Status, res.Execution.Error)
				return
			}
		}
	})
	b.StopTimer()
	if n := callers.Load(); n < benchCallers {
		b.Fatalf("%d callers ran, want %d", n, benchCallers)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
	if trips != nil {
		b.ReportMetric(float64(trips.n.Load())/float64(b.N), "roundtrips/op")
	}
}

// noLimits raises every operator limit out of reach, so the benchmark
// measures admitted calls rather than refusals. The limits are still
// measured and enforced on every call.
type noLimits struct{}

func (noLimits) SpendControls(context.Context, string) (storage.SpendControls, error) {
	usd := decimal.NewFromInt(1_000_000_000)
	calls := 1 << 30
	return storage.SpendControls{
		DailyLimitUSD: &usd, MonthlyLimitUSD: &usd,
		RateLimitPerMinute: &calls, RateLimitPerHour: &calls,
	}, nil
}

// benchPostgresStore is newStore for a benchmark: a fresh schema, dropped
// afterwards, on a pool with a connection per caller whose round trips are
// counted. It follows testURL's rule: skip without a server, except in CI.
func benchPostgresStore(b *testing.B) (*postgres.Store, *roundTrips) {
	b.Helper()
	url := os.Getenv(urlEnv)
	if url == "" {
		if os.Getenv("CI") == "true" {
			b.Fatalf("%s is not set; CI must run the PostgreSQL benchmarks", urlEnv)
		}
		b.Skipf("%s is not set; skipping PostgreSQL benchmarks", urlEnv)
	}
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = benchCallers
	trips := &roundTrips{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	schema := "toolgate_bench_" + hex.EncodeToString(r[:])
	b.Cleanup(func() {
		defer pool.Close()
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
		}
	})
	store, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	return store, trips
}

// roundTrips counts what a pool sends the server: each statement, BEGIN and
// COMMIT included, and each pipelined batch is one round trip. (A statement's
// first use on a connection also prepares it; that one-off is not counted.)
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

var (
	_ pgx.QueryTracer = (*roundTrips)(nil)
	_ pgx.BatchTracer = (*roundTrips)(nil)
)
