package postgres_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// spendEntries is every call the limits count, one row each with its
// reservation: the executions that still count, their reservation's state
// read from their status and charge (reserved while running or ambiguous),
// and the archive of pruned executions in spend_ledger. It is written here
// apart from the Store's own queries, so that they are checked against it.
func spendEntries(schema string) string {
	return `(SELECT id AS execution_id, principal, tool_id, amount_usd, created_at,
			CASE WHEN status IN ('running', 'ambiguous') THEN 'reserved'
				WHEN charged THEN 'charged' ELSE 'released' END AS state
		FROM ` + pgx.Identifier{schema, "executions"}.Sanitize() + ` WHERE counted
		UNION ALL
		SELECT execution_id, principal, tool_id, amount_usd, created_at, state
		FROM ` + pgx.Identifier{schema, "spend_ledger"}.Sanitize() + `) AS entries`
}

// recount measures a limit the slow way, summing the principal's raw
// entries, which is what every limit must equal whatever rollups the Store
// keeps.
func recount(t *testing.T, schema, principal string, l storage.Limit) decimal.Decimal {
	t.Helper()
	q := `SELECT COALESCE(SUM(amount_usd) FILTER (WHERE state <> 'released'), 0)::text, count(*)::text
		FROM ` + spendEntries(schema) + `
		WHERE principal = $1 AND created_at >= $2 AND ($3 = '' OR tool_id = $3)`
	var spend, calls string
	require.NoError(t, sharedPool(t).QueryRow(t.Context(), q, principal, l.Since, l.ToolID).Scan(&spend, &calls))
	if l.Measure == storage.MeasureSpend {
		return dec(spend)
	}
	return dec(calls)
}

// assertMeasuresExact checks every limit of every principal against
// recount, and every rollup row against the ledger rows it counts.
func assertMeasuresExact(t *testing.T, s *postgres.Store, schema string, principals []string, limits []storage.Limit) {
	t.Helper()
	assertRollupsExact(t, schema)
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

// assertRollupsExact checks that spend_daily and spend_minute hold exactly
// one row per bucket of spendEntries, with their count and unreleased
// spend: no bucket missing, none left empty, none counted twice.
func assertRollupsExact(t *testing.T, schema string) {
	t.Helper()
	for _, r := range []struct{ table, bucket, ledgerBucket string }{
		{"spend_daily", "to_char(day, 'YYYY-MM-DD')", "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"},
		{"spend_minute", "to_char(minute AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')",
			"to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ':00.000000'"},
	} {
		rows, err := sharedPool(t).Query(t.Context(), `
			WITH want AS (
				SELECT principal, `+r.ledgerBucket+` AS bucket, tool_id, count(*) AS calls,
					COALESCE(sum(amount_usd) FILTER (WHERE state <> 'released'), 0) AS spend_usd
				FROM `+spendEntries(schema)+` GROUP BY 1, 2, 3
			), got AS (
				SELECT principal, `+r.bucket+` AS bucket, tool_id, calls, spend_usd
				FROM `+pgx.Identifier{schema, r.table}.Sanitize()+`
			)
			SELECT format('%s %s %s: want %s calls %s, got %s calls %s', principal, bucket, tool_id,
				w.calls, w.spend_usd, g.calls, g.spend_usd)
			FROM want w FULL JOIN got g USING (principal, bucket, tool_id)
			WHERE w.calls IS DISTINCT FROM g.calls OR w.spend_usd IS DISTINCT FROM g.spend_usd`)
		require.NoError(t, err)
		wrong, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		assert.Emptyf(t, wrong, "%s differs from the calls it counts", r.table)
	}
}

// everySince is a limit of each measure and tool filter for each window
// start: the zero time; around the UTC midnight of each of instants, the
// instants just around it and just before the next one; and around each
// instant itself, the instants just around it, within its minute, and a
// minute, an hour and more before and after it. Tests place calls at and
// around the same instants, so that windows split between daily rollups,
// minute rollups and raw rows every way.
func everySince(instants []time.Time) []storage.Limit {
	var out []storage.Limit
	add := func(since time.Time) {
		for _, tool := range []string{"", "tool-a"} {
			out = append(out,
				storage.Limit{ToolID: tool, Measure: storage.MeasureSpend, Since: since},
				storage.Limit{ToolID: tool, Measure: storage.MeasureCalls, Since: since})
		}
	}
	add(time.Time{})
	for _, x := range instants {
		midnight := x.Truncate(24 * time.Hour)
		for _, off := range []time.Duration{
			-time.Microsecond, 0, time.Microsecond, 29 * time.Second, 30 * time.Second,
			23*time.Hour + 59*time.Minute, 23*time.Hour + 59*time.Minute + 29*time.Second,
			23*time.Hour + 59*time.Minute + 30*time.Second, 24*time.Hour - time.Microsecond,
		} {
			add(midnight.Add(off))
		}
		for _, off := range []time.Duration{
			-time.Hour, -59*time.Minute - 59*time.Second, -time.Minute, -30 * time.Second,
			-time.Microsecond, -500 * time.Nanosecond, 0, time.Microsecond,
			29 * time.Second, 30*time.Second - time.Microsecond, 30 * time.Second, 30*time.Second + time.Microsecond,
			31 * time.Second, time.Minute - time.Microsecond, time.Minute, time.Minute + time.Microsecond,
			90 * time.Minute, 13*time.Hour + 17*time.Minute + 23456789*time.Nanosecond,
		} {
			add(x.Add(off))
		}
	}
	return out
}

// aroundMinute is where calls fall around a whole minute: just before, on
// it, just after, around its middle, at its end and on the next one.
var aroundMinute = []time.Duration{
	-time.Microsecond, 0, time.Microsecond, 30*time.Second - time.Microsecond, 30 * time.Second,
	time.Minute - time.Microsecond, time.Minute,
}

// The rollups make limits cheap; they must never make them wrong: for any
// window start, through charges, releases, calls still running, ambiguous
// calls resolved either way, executions pruned into the archive and old
// history pruned, from the archive and from executions not yet pruned.
func TestMeasureMatchesLedgerForAnySince(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s, err := postgres.New(ctx, sharedPool(t), &postgres.Config{Schema: schema})
	require.NoError(t, err)

	day0 := t0.Truncate(24*time.Hour).AddDate(0, 0, -3)
	days := []time.Time{day0, day0.AddDate(0, 0, 1), day0.AddDate(0, 0, 2), day0.AddDate(0, 0, 3)}
	// Calls every 97 minutes from just before day0's midnight, and on each
	// day around its midnight, around one whole minute within it and
	// within the minute before the next midnight.
	var calls, instants []time.Time
	for i := range 60 {
		calls = append(calls, day0.Add(-time.Microsecond).Add(time.Duration(i)*97*time.Minute))
	}
	for _, d := range days {
		minute := d.Add(90 * time.Minute)
		instants = append(instants, minute)
		for _, at := range []time.Time{d, minute} {
			for _, off := range aroundMinute {
				calls = append(calls, at.Add(off))
			}
		}
		calls = append(calls, d.Add(24*time.Hour-30*time.Second))
	}
	principals := []string{"alice", "bob"}
	var running, ambiguous []storage.Begin
	for i, at := range calls {
		// Each principal calls both tools, around every instant on one day
		// or another; one call in five fails (released), one in seven is
		// left running (reserved) and one in eleven ends ambiguous
		// (reserved until resolved).
		tool := []string{"tool-a", "tool-b"}[i/2%2]
		q := testQuote(principals[i%2], tool, fmt.Sprintf("%d.%02d", i%3, i%100), at)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := testBegin(q, fmt.Sprint("k", i), at)
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		switch {
		case i%7 == 0:
			running = append(running, b)
		case i%11 == 0:
			f := testFinish(b, storage.ExecutionAmbiguous, at.Add(time.Second))
			f.Charged = false
			require.NoError(t, s.FinishExecution(ctx, f))
			ambiguous = append(ambiguous, b)
		case i%5 == 0:
			require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionFailed, at.Add(time.Second))))
		default:
			require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, at.Add(time.Second))))
		}
	}
	limits := everySince(instants)
	assertMeasuresExact(t, s, schema, principals, limits)

	// Half the ambiguous calls are resolved as charged, half as released.
	for i, b := range ambiguous[:len(ambiguous)/2] {
		outcome := []storage.ExecutionStatus{storage.ExecutionCompleted, storage.ExecutionFailed}[i%2]
		_, err := s.ResolveExecution(ctx, storage.Resolve{
			ExecutionID: b.ExecutionID, Outcome: outcome, ResolvedBy: "approver", Now: t0, Response: []byte(`{}`),
		})
		require.NoError(t, err)
	}
	assertMeasuresExact(t, s, schema, principals, limits)

	// Executions of the first day and a half go into the archive, running
	// ones whose lease ended included (still reserved); ambiguous ones
	// stay. Then old history goes: part of a day, then all of it, while a
	// call of that day runs, from the archive and from executions not yet
	// pruned; then up to the middle of a minute, which leaves part of its
	// rollup.
	for _, p := range []storage.Prune{
		{IdempotencyBefore: days[1].Add(12 * time.Hour), Limit: 5},
		{IdempotencyBefore: days[1].Add(12 * time.Hour), Limit: pruneAll},
		{LedgerBefore: days[1].Add(5 * time.Hour), Limit: 3},
		{LedgerBefore: days[1].Add(5 * time.Hour), Limit: pruneAll},
		{LedgerBefore: instants[2].Add(30 * time.Second), Limit: pruneAll},
	} {
		_, err = s.Prune(ctx, p)
		require.NoError(t, err)
		assertMeasuresExact(t, s, schema, principals, limits)
	}

	for _, b := range running {
		err := s.FinishExecution(ctx, testFinish(b, storage.ExecutionFailed, t0))
		if b.LeaseUntil.Before(days[1].Add(12 * time.Hour)) {
			// Pruned with its abandoned run: its reservation is archived.
			assert.ErrorIs(t, err, storage.ErrNotFound)
			continue
		}
		require.NoError(t, err)
	}
	assertMeasuresExact(t, s, schema, principals, limits)
	for i, b := range ambiguous[len(ambiguous)/2:] {
		outcome := []storage.ExecutionStatus{storage.ExecutionCompleted, storage.ExecutionFailed}[i%2]
		_, err := s.ResolveExecution(ctx, storage.Resolve{
			ExecutionID: b.ExecutionID, Outcome: outcome, ResolvedBy: "approver", Now: t0, Response: []byte(`{}`),
		})
		require.NoError(t, err)
	}
	assertMeasuresExact(t, s, schema, principals, limits)

	// Pruning everything leaves no rollup rows behind.
	for {
		res, err := s.Prune(ctx, storage.Prune{LedgerBefore: t0.AddDate(1, 0, 0), Limit: pruneAll})
		require.NoError(t, err)
		if res.Ledger == 0 {
			break
		}
	}
	for _, table := range []string{"spend_ledger", "spend_daily", "spend_minute"} {
		var left int
		require.NoError(t, sharedPool(t).QueryRow(ctx,
			`SELECT count(*) FROM `+pgx.Identifier{schema, table}.Sanitize()).Scan(&left))
		assert.Zerof(t, left, "rows left in %s", table)
	}
	var counted int
	require.NoError(t, sharedPool(t).QueryRow(ctx, `SELECT count(*) FROM `+
		pgx.Identifier{schema, "executions"}.Sanitize()+` WHERE counted`).Scan(&counted))
	assert.Zero(t, counted, "executions still counted")
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
		at := t0.AddDate(0, 0, -40).Add(time.Duration(i)*7*time.Hour + aroundMinute[i%len(aroundMinute)])
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
			at := t0.Add(aroundMinute[i%len(aroundMinute)])
			q := testQuote(principals[i%4], "tool-a", "0.10", at)
			assert.NoError(t, stores[i%2].CreateQuote(ctx, q))
			b := testBegin(q, fmt.Sprint("new", i), at)
			_, err := stores[i%2].BeginExecution(ctx, b)
			assert.NoError(t, err)
			assert.NoError(t, stores[i%2].FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, at)))
		})
	}
	wg.Wait()
	assert.Equal(t, old, pruned, "each old row pruned exactly once")
	assertMeasuresExact(t, stores[1], schema, principals, everySince([]time.Time{t0}))
	for _, p := range principals {
		assertUsed(t, stores[0], p, "0.50", "5")
	}
}

// A schema created and used by an earlier version is upgraded in place: by
// one with only migration 0001 (one usage row per tool, limits summed from
// the raw ledger) or one with 0004 (daily rollups kept by its triggers). Its
// history counts in limits and usage exactly as before, the rollups are
// filled from it exactly, and new calls add to it once.
func TestUpgradeFromEarlierSchemas(t *testing.T) {
	t.Parallel()
	for _, from := range []int{1, 4} {
		t.Run(fmt.Sprint("from ", from), func(t *testing.T) {
			t.Parallel()
			testUpgradeFrom(t, from)
		})
	}
}

// testUpgradeFrom writes a schema as the version with the migrations up to
// version did, then opens it with this one.
func testUpgradeFrom(t *testing.T, version int) {
	ctx := t.Context()
	schema := newSchema(t)
	pool := sharedPool(t)

	// What migrate.go did up to version, and what that version wrote.
	ident := pgx.Identifier{schema}.Sanitize()
	stmts := []string{
		`SET LOCAL search_path TO ` + ident,
		`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`,
	}
	files, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	for _, f := range files {
		name := filepath.Base(f)
		v, err := strconv.Atoi(name[:4])
		require.NoError(t, err)
		if v > version {
			break
		}
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		stmts = append(stmts, string(body),
			fmt.Sprintf(`INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')`, v, name))
	}
	stmts = append(stmts,
		`INSERT INTO spend_ledger (execution_id, principal, tool_id, amount_usd, state, created_at) VALUES
			(gen_random_uuid(), 'alice', 'tool-a', 1.00, 'charged',  '2030-03-01 00:00:00+00'),
			(gen_random_uuid(), 'alice', 'tool-a', 2.00, 'released', '2030-03-14 23:59:59.999999+00'),
			(gen_random_uuid(), 'alice', 'tool-b', 4.00, 'charged',  '2030-03-15 11:00:00+00'),
			(gen_random_uuid(), 'alice', 'tool-a', 8.00, 'reserved', '2030-02-20 10:00:00+00'),
			(gen_random_uuid(), 'bob',   'tool-a', 0.10, 'charged',  '2030-03-15 10:59:59.999999+00'),
			(gen_random_uuid(), 'bob',   'tool-a', 0.20, 'released', '2030-03-15 11:00:00+00'),
			(gen_random_uuid(), 'bob',   'tool-b', 0.40, 'charged',  '2030-03-15 11:00:00.000001+00'),
			(gen_random_uuid(), 'bob',   'tool-a', 0.80, 'reserved', '2030-03-15 11:00:30+00'),
			(gen_random_uuid(), 'bob',   'tool-a', 1.60, 'charged',  '2030-03-15 11:00:59.999999+00'),
			(gen_random_uuid(), 'bob',   'tool-b', 3.20, 'released', '2030-03-15 11:01:00+00'),
			(gen_random_uuid(), 'bob',   'tool-a', 6.40, 'charged',  '2030-03-14 23:59:30+00')`,
		`INSERT INTO tool_usage (tool_id, count, unique_users) VALUES ('tool-a', 7, 2)`,
		`INSERT INTO tool_users (tool_id, principal) VALUES ('tool-a', 'alice'), ('tool-a', 'bob')`,
	)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	for _, stmt := range stmts {
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
	principals := []string{"alice", "bob", "carol"}
	limits := everySince([]time.Time{month, t0.Add(-time.Hour), t0})
	assertMeasuresExact(t, s, schema, principals, limits)

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
	assertMeasuresExact(t, s, schema, principals, limits)
}

// TestArchiveRowsWrittenByHandAreCounted writes archive rows the way an
// operator's repair may since migration 0015, in a transaction that says it
// writes the archive, around admissions of this version. Such a row passes
// the ledger's insert trigger, which counts it in the rollups; only Prune
// says the rollups count its rows already. One connection does it all,
// after a transaction that set both, and a plain insert, as an earlier
// version's admission makes, is refused: a setting for one transaction
// must not leak into the next. Every call is counted once.
func TestArchiveRowsWrittenByHandAreCounted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	pool := sharedPool(t)
	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	conn, err := pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()

	insert := `INSERT INTO ` + pgx.Identifier{schema, "spend_ledger"}.Sanitize() + `
		(execution_id, principal, tool_id, amount_usd, state, created_at) VALUES (gen_random_uuid(), $1, $2, $3, $4, $5)`
	for i := range 6 {
		at := t0.Add(time.Duration(i) * 40 * time.Second)
		q := testQuote("alice", "tool-a", "1.50", at)
		require.NoError(t, s.CreateQuote(ctx, q))
		_, err := s.BeginExecution(ctx, testBegin(q, fmt.Sprint("k", i), at))
		require.NoError(t, err)

		tx, err := conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT set_config('toolgate.admission_rollups', 'inline', true),
			set_config('toolgate.ledger_archive', 'on', true)`)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		state := []string{"reserved", "charged", "released"}[i%3]
		_, err = conn.Exec(ctx, insert, "alice", "tool-a", "0.2500", state, at)
		assert.ErrorContains(t, err, "migration 0015", "a plain insert")

		tx, err = conn.Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT set_config('toolgate.ledger_archive', 'on', true)`)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, insert, "alice", "tool-a", "0.2500", state, at)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
	}
	limits := []storage.Limit{
		{Measure: storage.MeasureCalls, Since: t0.Add(-time.Hour), Max: dec("100")},
		{Measure: storage.MeasureSpend, Since: t0.Add(-time.Hour), Max: dec("100")},
	}
	assertMeasuresExact(t, s, schema, []string{"alice"}, limits)
	used, err := s.MeasureLimits(ctx, "alice", limits)
	require.NoError(t, err)
	assert.Equal(t, "12", used[0].String(), "six admissions and six archive rows")
	assert.Equal(t, "10", used[1].String(), "9.00 reserved by the admissions, 1.00 by the archive rows not released")
}

// An execution id whose execution Prune deleted, while the archive still
// holds its call, stays taken: a second call admitted under it would have
// Prune archive the id a second time, which the archive's key refuses, and
// every later Prune would fail on it.
func TestArchivedExecutionIDStaysTaken(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	at := t0.Add(-48 * time.Hour)
	q := testQuote("alice", "tool-a", "0.10", at)
	require.NoError(t, s.CreateQuote(ctx, q))
	b := testBegin(q, "k1", at)
	_, err := s.BeginExecution(ctx, b)
	require.NoError(t, err)
	require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, at)))
	res, err := s.Prune(ctx, storage.Prune{IdempotencyBefore: t0.Add(-24 * time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	require.Equal(t, 1, res.Idempotency, "the execution is pruned, its call archived")

	reused := testQuote("alice", "tool-a", "0.10", t0)
	require.NoError(t, s.CreateQuote(ctx, reused))
	b2 := testBegin(reused, "k2", t0)
	b2.ExecutionID = b.ExecutionID
	_, err = s.BeginExecution(ctx, b2)
	require.ErrorIs(t, err, storage.ErrAlreadyExists)

	got, err := s.GetQuote(ctx, reused.ID)
	require.NoError(t, err)
	assert.Equal(t, storage.QuoteOpen, got.State, "nothing was written")
	_, err = s.GetIdempotency(ctx, "alice", "k2")
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUsed(t, s, "alice", "0.10", "1")

	// A fresh id is admitted, and Prune keeps working through both.
	b3 := testBegin(reused, "k3", t0)
	_, err = s.BeginExecution(ctx, b3)
	require.NoError(t, err)
	require.NoError(t, s.FinishExecution(ctx, testFinish(b3, storage.ExecutionCompleted, t0)))
	res, err = s.Prune(ctx, storage.Prune{IdempotencyBefore: t0.Add(time.Hour), LedgerBefore: t0.Add(-24 * time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, storage.PruneResult{Idempotency: 1, Ledger: 1}, res)
	assertUsed(t, s, "alice", "0.10", "1")
}
