package postgres_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
)

// recount measures a limit the slow way, summing the principal's raw ledger
// rows, which is what every limit must equal whatever rollups the Store
// keeps.
func recount(t *testing.T, schema, principal string, l storage.Limit) decimal.Decimal {
	t.Helper()
	q := `SELECT COALESCE(SUM(amount_usd) FILTER (WHERE state <> 'released'), 0)::text, count(*)::text
		FROM ` + pgx.Identifier{schema, "spend_ledger"}.Sanitize() + `
		WHERE principal = $1 AND created_at >= $2 AND ($3 = '' OR tool_id = $3)`
	var spend, calls string
	require.NoError(t, sharedPool(t).QueryRow(t.Context(), q, principal, l.Since, l.ToolID).Scan(&spend, &calls))
	if l.Measure == storage.MeasureSpend {
		return dec(spend)
	}
	return dec(calls)
}

// assertMeasuresExact checks every limit of every principal against recount.
func assertMeasuresExact(t *testing.T, s *postgres.Store, schema string, principals []string, limits []storage.Limit) {
	t.Helper()
	for _, p := range principals {
		got, err := s.MeasureLimits(t.Context(), p, limits)
		require.NoError(t, err)
		for i, l := range limits {
			want := recount(t, schema, p, l)
			assert.Truef(t, want.Equal(got[i]), "%s %s of %q since %s: want %s, got %s",
				p, l.Measure, l.ToolID, l.Since.Format(time.RFC3339Nano), want, got[i])
		}
	}
}

// everySince is a limit of each measure and tool filter for each window
// start: UTC midnights, the instants just around them, and times within
// days, so that windows split between rollups and raw rows every way.
func everySince(days []time.Time) []storage.Limit {
	var out []storage.Limit
	add := func(since time.Time) {
		for _, tool := range []string{"", "tool-a"} {
			out = append(out,
				storage.Limit{ToolID: tool, Measure: storage.MeasureSpend, Since: since},
				storage.Limit{ToolID: tool, Measure: storage.MeasureCalls, Since: since})
		}
	}
	add(time.Time{})
	for _, d := range days {
		for _, off := range []time.Duration{-time.Microsecond, 0, time.Microsecond, 90 * time.Minute, 23*time.Hour + 59*time.Minute} {
			add(d.Add(off))
		}
	}
	return out
}

// The rollups make limits cheap; they must never make them wrong: for any
// window start, through releases, calls still running and pruning.
func TestMeasureMatchesLedgerForAnySince(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s, err := postgres.New(ctx, sharedPool(t), &postgres.Config{Schema: schema})
	require.NoError(t, err)

	day0 := t0.Truncate(24*time.Hour).AddDate(0, 0, -3)
	days := []time.Time{day0, day0.AddDate(0, 0, 1), day0.AddDate(0, 0, 2), day0.AddDate(0, 0, 3)}
	principals := []string{"alice", "bob"}
	var running []storage.Begin
	for i := range 60 {
		// Calls every 97 minutes from just before day0's midnight, some on
		// a midnight exactly, on two tools; one in five fails (released)
		// and one in seven is left running (reserved).
		at := day0.Add(-time.Microsecond).Add(time.Duration(i) * 97 * time.Minute)
		if i%11 == 0 {
			at = days[i%4]
		}
		tool := []string{"tool-a", "tool-b"}[i%2]
		q := testQuote(principals[i%2], tool, fmt.Sprintf("%d.%02d", i%3, i), at)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := testBegin(q, fmt.Sprint("k", i), at)
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		switch {
		case i%7 == 0:
			running = append(running, b)
		case i%5 == 0:
			require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionFailed, at.Add(time.Second))))
		default:
			require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, at.Add(time.Second))))
		}
	}
	limits := everySince(days)
	assertMeasuresExact(t, s, schema, principals, limits)

	// Prune part of a day, then all of it, while a call of that day runs.
	_, err = s.Prune(ctx, storage.Prune{LedgerBefore: days[1].Add(5 * time.Hour), Limit: 3})
	require.NoError(t, err)
	assertMeasuresExact(t, s, schema, principals, limits)
	_, err = s.Prune(ctx, storage.Prune{LedgerBefore: days[1].Add(5 * time.Hour)})
	require.NoError(t, err)
	assertMeasuresExact(t, s, schema, principals, limits)

	for _, b := range running {
		require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionFailed, t0)))
	}
	assertMeasuresExact(t, s, schema, principals, limits)

	// Pruning everything leaves no rollup rows behind.
	for {
		res, err := s.Prune(ctx, storage.Prune{LedgerBefore: t0.AddDate(1, 0, 0)})
		require.NoError(t, err)
		if res.Ledger == 0 {
			break
		}
	}
	var left int
	require.NoError(t, sharedPool(t).QueryRow(ctx,
		`SELECT count(*) FROM `+pgx.Identifier{schema, "spend_daily"}.Sanitize()).Scan(&left))
	assert.Zero(t, left)
	assertMeasuresExact(t, s, schema, principals, limits)
}

// Prunes on several instances at once delete each old row once, keep the
// rollups exact and never deadlock on them, while calls are admitted.
func TestConcurrentLedgerPrunes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	stores := []*postgres.Store{openInstance(t, schema), openInstance(t, schema)}
	principals := []string{"p0", "p1", "p2", "p3"}
	const old = 120
	for i := range old {
		at := t0.AddDate(0, 0, -40).Add(time.Duration(i) * 7 * time.Hour)
		q := testQuote(principals[i%4], "tool-a", "0.10", at)
		require.NoError(t, stores[0].CreateQuote(ctx, q))
		b := testBegin(q, fmt.Sprint("old", i), at)
		_, err := stores[0].BeginExecution(ctx, b)
		require.NoError(t, err)
		require.NoError(t, stores[0].FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, at)))
	}

	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		pruned int
	)
	for i := range 4 {
		wg.Go(func() {
			for {
				res, err := stores[i%2].Prune(ctx, storage.Prune{LedgerBefore: t0.AddDate(0, 0, -1), Limit: 7})
				if !assert.NoError(t, err) || res.Ledger == 0 {
					return
				}
				mu.Lock()
				pruned += res.Ledger
				mu.Unlock()
			}
		})
	}
	for i := range 20 {
		wg.Go(func() {
			q := testQuote(principals[i%4], "tool-a", "0.10", t0)
			assert.NoError(t, stores[i%2].CreateQuote(ctx, q))
			b := testBegin(q, fmt.Sprint("new", i), t0)
			_, err := stores[i%2].BeginExecution(ctx, b)
			assert.NoError(t, err)
			assert.NoError(t, stores[i%2].FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, t0)))
		})
	}
	wg.Wait()
	assert.Equal(t, old, pruned, "each old row pruned exactly once")
	assertMeasuresExact(t, stores[1], schema, principals, everySince([]time.Time{t0.Truncate(24 * time.Hour)}))
	for _, p := range principals {
		assertUsed(t, stores[0], p, "0.50", "5")
	}
}

// A schema created and used by a version with only migration 0001 (one
// usage row per tool, limits summed from the raw ledger) is upgraded in
// place: its history counts in limits and usage exactly as before, and new
// calls add to it.
func TestUpgradeFromFirstSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	pool := sharedPool(t)
	first, err := os.ReadFile("migrations/0001_init.sql")
	require.NoError(t, err)

	// What migrate.go did at version 1, and what that version wrote.
	ident := pgx.Identifier{schema}.Sanitize()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	for _, stmt := range []string{
		`SET LOCAL search_path TO ` + ident,
		`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`,
		string(first),
		`INSERT INTO schema_migrations (version, name) VALUES (1, '0001_init.sql')`,
		`INSERT INTO spend_ledger (execution_id, principal, tool_id, amount_usd, state, created_at) VALUES
			(gen_random_uuid(), 'alice', 'tool-a', 1.00, 'charged',  '2030-03-01 00:00:00+00'),
			(gen_random_uuid(), 'alice', 'tool-a', 2.00, 'released', '2030-03-14 23:59:59.999999+00'),
			(gen_random_uuid(), 'alice', 'tool-b', 4.00, 'charged',  '2030-03-15 11:00:00+00'),
			(gen_random_uuid(), 'alice', 'tool-a', 8.00, 'reserved', '2030-02-20 10:00:00+00')`,
		`INSERT INTO tool_usage (tool_id, count, unique_users) VALUES ('tool-a', 7, 2)`,
		`INSERT INTO tool_users (tool_id, principal) VALUES ('tool-a', 'alice'), ('tool-a', 'bob')`,
	} {
		_, err := tx.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	require.NoError(t, tx.Commit(ctx))

	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	month := time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC)
	day := t0.Truncate(24 * time.Hour)
	got, err := s.MeasureLimits(ctx, "alice", []storage.Limit{
		{Measure: storage.MeasureSpend, Since: month},
		{Measure: storage.MeasureCalls, Since: month},
		{Measure: storage.MeasureSpend, Since: day},
		{ToolID: "tool-a", Measure: storage.MeasureSpend, Since: time.Time{}},
	})
	require.NoError(t, err)
	for i, want := range []string{"5", "3", "4", "9"} {
		assert.Truef(t, dec(want).Equal(got[i]), "limit %d: want %s, got %s", i, want, got[i])
	}
	assertMeasuresExact(t, s, schema, []string{"alice"}, everySince([]time.Time{month, day}))

	// A new principal's completed call counts once more, and once more as
	// a user; alice's does not add a user.
	for _, p := range []string{"carol", "alice"} {
		q := testQuote(p, "tool-a", "0.50", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := testBegin(q, "k-"+p, t0)
		_, err = s.BeginExecution(ctx, b)
		require.NoError(t, err)
		require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, t0)))
	}
	u, err := s.Usage(ctx, "tool-a")
	require.NoError(t, err)
	assert.Equal(t, storage.Usage{Count: 9, UniqueUsers: 3}, u)
	all, err := s.UsageAll(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]storage.Usage{"tool-a": u}, all)
	assertUsed(t, s, "alice", "13.50", "5")
}
