package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetest"
)

// scaleRecords is how many past calls the loaded store holds: executions
// (each its key's record and reservation) and quotes, one of each per call.
const scaleRecords = 1_000_000

// Who made the loaded calls. Half belong to scaleHeavy principals (2,500
// calls each this month), whom the benchmark's callers are drawn from, so
// that every admission measures a month of its own history; the other half
// are spread over scaleLight principals, as a store's other users.
const (
	scaleHeavy = 200
	scaleLight = 10_000
)

// BenchmarkQuoteCallPostgresScale is BenchmarkQuoteCallPostgres on an empty
// store and on one already holding scaleRecords calls. The target is that
// a pair's latency on the second stays within 1.25 times the first's: the
// 1M result reports that ratio (latency/empty), against the mean latency of
// every pair the empty runs before it made (so b.N's short first trials,
// with their cold statement caches, weigh next to nothing); run both sizes
// together.
//
// Each store is loaded once and kept for every run of the benchmark (every
// b.N and -count). Each run calls as the next toolgatetest.BenchCallers of
// the heavy principals (coming round again after scaleHeavy/BenchCallers
// runs), so the rate-limit windows (the last minute and hour) hold little
// more than that run's calls, as they would for a caller within its
// limits, while the day and month windows of the loaded store hold each
// caller's history.
func BenchmarkQuoteCallPostgresScale(b *testing.B) {
	var emptyLatency, emptyPairs float64 // latency summed over pairs, and pairs
	for _, size := range []struct {
		name    string
		records int
	}{
		{"empty", 0},
		{"1M", scaleRecords},
	} {
		b.Run(size.name, func(b *testing.B) {
			f := loadedStore(b, size.name, size.records)
			first := int(f.runs.Add(1)-1) * toolgatetest.BenchCallers
			latency := toolgatetest.BenchQuoteCall(b, f.store, echoBench(f.trips, func(i int) string {
				return fmt.Sprintf("scale-%d", (first+i)%scaleHeavy)
			}))
			switch {
			case size.records == 0:
				emptyLatency += latency * float64(b.N)
				emptyPairs += float64(b.N)
			case emptyPairs > 0:
				b.ReportMetric(latency/(emptyLatency/emptyPairs), "latency/empty")
			}
		})
	}
}

// loadedFixture is one loaded store, shared by every run of a benchmark.
type loadedFixture struct {
	store *postgres.Store
	trips *roundTrips
	runs  atomic.Int64
}

var loaded struct {
	mu sync.Mutex
	m  map[string]*loadedFixture
}

// loadedStore returns the store for name, holding records past calls,
// loading it on first use. It lives until the process ends.
func loadedStore(b *testing.B, name string, records int) *loadedFixture {
	b.Helper()
	loaded.mu.Lock()
	defer loaded.mu.Unlock()
	if f := loaded.m[name]; f != nil {
		return f
	}
	schema, drop := makeSchema(b, "toolgate_bench_", false)
	pool, trips := benchPool(b)
	onExit(func() {
		pool.Close()
		if err := drop(); err != nil {
			fmt.Println(err)
		}
	})
	ctx := context.Background()
	store, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	if records > 0 {
		began := time.Now()
		if err := loadHistory(ctx, pool, schema, records, time.Now()); err != nil {
			b.Fatalf("load %d calls: %v", records, err)
		}
		b.Logf("loaded %d calls in %s", records, time.Since(began).Round(time.Second))
	}
	f := &loadedFixture{store: store, trips: trips}
	if loaded.m == nil {
		loaded.m = map[string]*loadedFixture{}
	}
	loaded.m[name] = f
	return f
}

// loadHistory writes n past calls of the echo tool into schema, as the
// store would have: a used quote, an execution (one in seven failed, each
// with its key's fingerprint and ended lease, and its reservation), spread
// evenly over this month up to two hours before now, and the rollups and
// usage counters that go with them. It loads as a bulk load would, to stay within a minute:
// set-based statements, secondary indexes built after the rows are in, rows
// in primary-key order, triggers off (the rollups are computed at the end,
// the way migration 0003 does), and independent statements two at a time.
func loadHistory(ctx context.Context, pool *pgxpool.Pool, schema string, n int, now time.Time) error {
	end := now.Add(-2 * time.Hour)
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	if end.Sub(start) < 24*time.Hour {
		start = end.Add(-20 * 24 * time.Hour) // too early in the month: use the last one
	}
	tool := registry.StableID("tool:echo")
	q := func(sql string) string {
		return strings.ReplaceAll(sql, "{schema}", pgx.Identifier{schema}.Sanitize())
	}
	// Every row of call i is derived from i, so the tables agree.
	const call = `
		SELECT i,
			CASE WHEN i % 2 = 0 THEN 'scale-' || (i / 2 % $4) ELSE 'light-' || (i / 2 % $5) END AS principal,
			'hist-' || i AS key,
			md5('quote' || i)::uuid AS quote_id,
			md5('execution' || i)::uuid AS execution_id,
			$2::timestamptz + ($3::timestamptz - $2::timestamptz) * (i::float8 / $1) AS at,
			i % 7 <> 0 AS completed
		FROM generate_series(0, $1 - 1) AS i`
	args := []any{n, start, end, scaleHeavy, scaleLight, tool}

	indexes, err := secondaryIndexes(ctx, pool, schema)
	if err != nil {
		return err
	}
	var drop, build []loadStep
	for _, ix := range indexes {
		drop = append(drop, loadStep{sql: `DROP INDEX ` + ix.name})
		build = append(build, loadStep{sql: ix.def})
	}
	var vacuum []loadStep
	for _, table := range []string{"quotes", "executions", "spend_ledger", "spend_daily", "spend_minute", "tool_users"} {
		vacuum = append(vacuum, loadStep{sql: `VACUUM (ANALYZE) ` + pgx.Identifier{schema, table}.Sanitize()})
	}
	phases := [][]loadStep{
		drop,
		{
			{q(`INSERT INTO {schema}.quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
					price_usd, fee_usd, total_usd, created_at, expires_at, state, used_by_key)
				SELECT quote_id, principal, $6, 'echo', 1, '', 0.1, 0.01, 0.11, at, at + interval '5 minutes', 'used', key
				FROM (` + call + `) c ORDER BY quote_id`), args},
			{q(`INSERT INTO {schema}.executions (id, principal, tool_id, quote_id, idempotency_key, status,
					amount_usd, charged, response, created_at, finished_at, fingerprint, lease_token, lease_until)
				SELECT execution_id, principal, $6, quote_id, key,
					CASE WHEN completed THEN 'completed' ELSE 'failed' END, 0.11, completed,
					convert_to('{"executionId":"' || execution_id || '","status":"'
						|| CASE WHEN completed THEN 'completed' ELSE 'failed' END || '","output":{"value":"hello"}}', 'UTF8'),
					at, at + interval '200 milliseconds', 'fp-' || i, md5('lease' || i)::uuid, at + interval '1 minute'
				FROM (` + call + `) c ORDER BY execution_id`), args},
		},
		// Empty unless the triggers had to stay on.
		{{q(`DELETE FROM {schema}.spend_daily`), nil}, {q(`DELETE FROM {schema}.spend_minute`), nil}},
		{
			// Each call's reservation is on its execution (migration
			// 0015), which counts in the rollups; none is archived yet.
			{q(`INSERT INTO {schema}.spend_daily (principal, day, tool_id, calls, spend_usd)
				SELECT principal, (created_at AT TIME ZONE 'UTC')::date, tool_id, count(*),
					COALESCE(sum(amount_usd) FILTER (WHERE charged), 0)
				FROM {schema}.executions GROUP BY 1, 2, 3`), nil},
			{q(`INSERT INTO {schema}.spend_minute (principal, minute, tool_id, calls, spend_usd)
				SELECT principal, date_trunc('minute', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', tool_id, count(*),
					COALESCE(sum(amount_usd) FILTER (WHERE charged), 0)
				FROM {schema}.executions GROUP BY 1, 2, 3`), nil},
			{q(`INSERT INTO {schema}.tool_users (tool_id, principal)
				SELECT DISTINCT tool_id, principal FROM {schema}.executions WHERE status = 'completed'`), nil},
		},
		{{q(`INSERT INTO {schema}.tool_usage (tool_id, count, unique_users)
			SELECT $1, (SELECT count(*) FROM {schema}.executions WHERE status = 'completed'),
				(SELECT count(*) FROM {schema}.tool_users WHERE tool_id = $1)`), []any{tool}}},
		build,
		// As a long-lived store would be: statistics current and
		// visibility maps set.
		vacuum,
	}
	for _, phase := range phases {
		if err := runTwoAtATime(ctx, pool, phase); err != nil {
			return err
		}
	}
	// The load's dirty pages written out now rather than by a checkpoint in
	// the middle of the benchmark. It needs a superuser; without one the
	// figures are only less steady.
	_, _ = pool.Exec(ctx, `CHECKPOINT`)
	return nil
}

// loadStep is one statement of loadHistory.
type loadStep struct {
	sql  string
	args []any
}

// runTwoAtATime runs steps on two connections of pool, each set up for bulk
// loading: no waiting for the disk on commit, room to sort in memory, and
// triggers off (which needs a superuser; without one they just run).
func runTwoAtATime(ctx context.Context, pool *pgxpool.Pool, steps []loadStep) error {
	next := make(chan loadStep, len(steps))
	for _, st := range steps {
		next <- st
	}
	close(next)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			errs <- func() error {
				conn, err := pool.Acquire(ctx)
				if err != nil {
					return err
				}
				defer conn.Release()
				for _, setup := range []string{
					`SET synchronous_commit = off`,
					`SET work_mem = '256MB'`,
					`SET maintenance_work_mem = '256MB'`,
					`DO $$ BEGIN SET session_replication_role = replica; EXCEPTION WHEN insufficient_privilege THEN END $$`,
				} {
					if _, err := conn.Exec(ctx, setup); err != nil {
						return err
					}
				}
				// A pooled connection goes back as it came.
				defer func() { _, _ = conn.Exec(context.Background(), `RESET ALL`) }()
				for st := range next {
					if _, err := conn.Exec(ctx, st.sql, st.args...); err != nil {
						return fmt.Errorf("%.60s...: %w", strings.Join(strings.Fields(st.sql), " "), err)
					}
				}
				return nil
			}()
		}()
	}
	return errors.Join(<-errs, <-errs)
}

// secondaryIndex is an index that is not a primary key, and how to make it.
type secondaryIndex struct{ name, def string }

func secondaryIndexes(ctx context.Context, pool *pgxpool.Pool, schema string) ([]secondaryIndex, error) {
	rows, err := pool.Query(ctx, `
		SELECT format('%I.%I', n.nspname, c.relname), pg_get_indexdef(i.indexrelid)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND NOT i.indisprimary`, schema)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (secondaryIndex, error) {
		var ix secondaryIndex
		err := row.Scan(&ix.name, &ix.def)
		return ix, err
	})
}
