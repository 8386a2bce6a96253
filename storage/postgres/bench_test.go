package postgres_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// BenchmarkQuoteCallPostgres measures quote+call pairs (one op is one pair)
// on PostgreSQL with toolgatetest.BenchCallers concurrent callers and a
// provider that answers at once: what is left is the gateway and its store.
func BenchmarkQuoteCallPostgres(b *testing.B) {
	store, trips := benchPostgresStore(b)
	toolgatetest.BenchQuoteCall(b, store, echoBench(trips, nil))
}

// BenchmarkQuoteCallPostgresBudgets is BenchmarkQuoteCallPostgres with
// every caller in two budgets, a team's and its parent's, with daily and
// monthly limits out of reach: the cost of a pair in budgets beside one
// in none. All callers share the budgets, so their admissions take turns
// on the same two lock rows, the most a budget's admissions ever wait.
func BenchmarkQuoteCallPostgresBudgets(b *testing.B) {
	benchBudgets(b, false)
}

// BenchmarkQuoteCallPostgresBudgetsRate is BenchmarkQuoteCallPostgresBudgets
// with a rate per minute on the team too, out of reach as well: each
// admission counts the team's calls of the last minute.
func BenchmarkQuoteCallPostgresBudgetsRate(b *testing.B) {
	benchBudgets(b, true)
}

// benchBudgets runs the pair benchmark with every caller in a team budget
// and its parent, the team with a rate limit when rate is set.
func benchBudgets(b *testing.B, rate bool) {
	store, trips := benchPostgresStore(b)
	cfg := echoBench(trips, nil)
	members := make([]string, toolgatetest.BenchCallers)
	for i := range members {
		members[i] = "caller-" + strconv.Itoa(i)
	}
	monthly, daily := decimal.RequireFromString("1000000000.0000"), decimal.RequireFromString("100000000.0000")
	team := toolgatetype.BudgetDefinition{ID: "search", Parent: "acme", Members: members, DailyLimitUSD: &daily}
	if rate {
		perMinute := 100000000
		team.RateLimitPerMinute = &perMinute
	}
	cfg.Budgets = []toolgatetype.BudgetDefinition{{ID: "acme", MonthlyLimitUSD: &monthly}, team}
	toolgatetest.BenchQuoteCall(b, store, cfg)
}

// BenchmarkQuoteCallMemory is BenchmarkQuoteCallPostgres on the memory
// store, for comparison from the same run.
func BenchmarkQuoteCallMemory(b *testing.B) {
	toolgatetest.BenchQuoteCall(b, memory.New(), echoBench(nil, nil))
}

// echoBench is what this package's benchmarks call: the echo tool, from an
// in-process provider. trips, when not nil, counts the store's round trips;
// principal names the callers (nil: caller-0 onwards).
func echoBench(trips *roundTrips, principal func(i int) string) *toolgatetest.BenchConfig {
	cfg := &toolgatetest.BenchConfig{
		Tool: echoTool(), Transport: toolgatetest.NewUpstream(), Input: []byte(`{"v":"hello"}`), Principal: principal,
	}
	if trips != nil {
		cfg.RoundTrips = &trips.n
	}
	return cfg
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
	cfg.MaxConns = toolgatetest.BenchCallers
	trips := &roundTrips{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return pool, trips
}

// roundTrips counts what a pool sends the server: each statement, BEGIN and
// COMMIT included, and each pipelined batch is one round trip (n); stmts
// counts the statements, each of a batch's included. (A statement's first
// use on a connection also prepares it; that one-off is not counted.)
type roundTrips struct{ n, stmts atomic.Int64 }

// reset zeroes both counts.
func (r *roundTrips) reset() {
	r.n.Store(0)
	r.stmts.Store(0)
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	r.stmts.Add(1)
	return ctx
}

func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}

func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	r.stmts.Add(1)
}

func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

var (
	_ pgx.QueryTracer = (*roundTrips)(nil)
	_ pgx.BatchTracer = (*roundTrips)(nil)
)
