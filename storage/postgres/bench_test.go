package postgres_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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
	benchmarkQuoteCall(b, store, trips, callerNamed("caller-", 0))
}

// BenchmarkQuoteCallMemory is BenchmarkQuoteCallPostgres on the memory
// store, for comparison from the same run.
func BenchmarkQuoteCallMemory(b *testing.B) {
	benchmarkQuoteCall(b, memory.New(), nil, callerNamed("caller-", 0))
}

// callerNamed names the callers of one run prefix0 to prefix15, from first
// on.
func callerNamed(prefix string, first int) func(i int) string {
	return func(i int) string { return prefix + strconv.Itoa(first+i) }
}

// benchmarkQuoteCall reports pairs/s beside ns/op, the mean time one caller
// waits for one pair (latency-µs, which it also returns), and, given the
// store's round-trip counter, the round trips to the database per pair.
// principal names the callers, numbered 0 to benchCallers-1.
func benchmarkQuoteCall(b *testing.B, store storage.Store, trips *roundTrips, principal func(i int) string) (latencyMicros float64) {
	reg := registry.New()
	if err := reg.Register(echoTool()); err != nil {
		b.Fatal(err)
	}
	gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: toolgatetest.NewUpstream(), SpendControls: testproc.RaisedLimits{}})
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
	if trips != nil {
		trips.n.Store(0) // not the migrations
	}
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		who := principal(int(callers.Add(1) - 1))
		for i := 0; pb.Next(); i++ {
			start := time.Now()
			q, err := gw.Quote(ctx, who, "echo")
			if err != nil {
				b.Error(err)
				return
			}
			res, err := gw.Call(ctx, who, toolgatetype.CallRequest{
				Tool: "echo", QuoteID: q.Quote.ID, Input: []byte(`{"v":"hello"}`), IdempotencyKey: strconv.Itoa(i),
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
	if n := callers.Load(); n < benchCallers {
		b.Fatalf("%d callers ran, want %d", n, benchCallers)
	}
	latencyMicros = float64(waited.Load()) / float64(b.N) / 1e3
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(latencyMicros, "latency-µs")
	if trips != nil {
		b.ReportMetric(float64(trips.n.Load())/float64(b.N), "roundtrips/op")
	}
	return latencyMicros
}

// benchPostgresStore is newStore for a benchmark: a fresh schema, dropped
// afterwards, on a pool of its own (see benchPool).
func benchPostgresStore(b *testing.B) (*postgres.Store, *roundTrips) {
	b.Helper()
	schema := newSchema(b)
	pool, trips := benchPool(b)
	b.Cleanup(pool.Close) // before the schema is dropped
	store, err := postgres.New(b.Context(), pool, &postgres.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	return store, trips
}

// benchPool returns a pool with a connection per caller whose round trips
// are counted. The caller closes it.
func benchPool(b testing.TB) (*pgxpool.Pool, *roundTrips) {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(testURL(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = benchCallers
	trips := &roundTrips{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return pool, trips
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
