package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetCall is a call of principal at `at` that counts in budgets, each
// on at's UTC day, under limits.
func budgetCall(q storage.Quote, key string, at time.Time, budgets []string, limits ...storage.Limit) storage.Begin {
	b := testBegin(q, key, at, limits...)
	for _, id := range budgets {
		b.Budgets = append(b.Budgets, storage.BudgetDay{Budget: id, Day: at.UTC().Format(time.DateOnly)})
	}
	return b
}

// budgetDaily is a budget's spend limit from day on.
func budgetDaily(budget, day, max string) storage.Limit {
	return storage.Limit{Budget: budget, Measure: storage.MeasureSpend, FromDay: day, Max: dec(max)}
}

// budgetUsed measures a budget's limit; the principal is not looked at.
func budgetUsed(t *testing.T, s *postgres.Store, l storage.Limit) decimal.Decimal {
	t.Helper()
	got, err := s.MeasureLimits(t.Context(), "whoever", []storage.Limit{l})
	require.NoError(t, err)
	return got[0]
}

// assertBudgetRollupsExact checks budget_daily against the executions it
// counts, recounted from their own columns: per budget, day and tool,
// every call, and the amounts not released; and budget_spend against the
// charged ones. No row missing, none left over, none counted twice.
func assertBudgetRollupsExact(t *testing.T, schema string) {
	t.Helper()
	execs := pgx.Identifier{schema, "executions"}.Sanitize()
	for _, c := range []struct{ table, want, got string }{
		{"budget_daily", `
			SELECT x.budget, x.day::text AS day, e.tool_id AS tool, '' AS principal, count(*) AS calls,
				COALESCE(sum(e.amount_usd) FILTER (WHERE e.charged OR e.status IN ('running', 'ambiguous')), 0) AS spend_usd
			FROM ` + execs + ` e, unnest(e.budgets, e.budget_days) AS x(budget, day)
			GROUP BY 1, 2, 3`, `
			SELECT budget, day::text, tool_id, '', calls, spend_usd FROM ` + pgx.Identifier{schema, "budget_daily"}.Sanitize()},
		{"budget_minute", `
			SELECT x.budget, to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS day, e.tool_id AS tool,
				'' AS principal, count(*) AS calls, 0 AS spend_usd
			FROM ` + execs + ` e, unnest(e.budgets) AS x(budget)
			GROUP BY 1, 2, 3`, `
			SELECT budget, to_char(minute AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI'), tool_id, '', calls, 0
			FROM ` + pgx.Identifier{schema, "budget_minute"}.Sanitize()},
		{"budget_spend", `
			SELECT x.budget, x.day::text AS day, COALESCE(NULLIF(e.tool_slug, ''), e.tool_id) AS tool, e.principal,
				count(*) AS calls, sum(e.amount_usd) AS spend_usd
			FROM ` + execs + ` e, unnest(e.budgets, e.budget_days) AS x(budget, day)
			WHERE e.charged GROUP BY 1, 2, 3, 4`, `
			SELECT budget, day::text, tool, principal, calls, spend_usd FROM ` + pgx.Identifier{schema, "budget_spend"}.Sanitize()},
	} {
		rows, err := sharedPool(t).Query(t.Context(), `
			WITH want AS (`+c.want+`), got(budget, day, tool, principal, calls, spend_usd) AS (`+c.got+`)
			SELECT format('%s %s %s %s: want %s calls %s, got %s calls %s', budget, day, tool, principal,
				w.calls, w.spend_usd, g.calls, g.spend_usd)
			FROM want w FULL JOIN got g USING (budget, day, tool, principal)
			WHERE w.calls IS DISTINCT FROM g.calls OR w.spend_usd IS DISTINCT FROM g.spend_usd`)
		require.NoError(t, err)
		wrong, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		assert.Emptyf(t, wrong, "%s differs from the calls it counts", c.table)
	}
}

// TestMultiInstanceBudgetAndParentHold admits calls of four principals at
// once on two instances: two in a team budget whose parent, the
// organization's, the other two count in directly. The team's limit and
// the organization's bind exactly, on both instances together. Then,
// with each admitted call finished at once, completed or failed, while
// others are admitted, neither budget is ever over and the budgets'
// rollups are exactly what their calls add up to: admissions of
// different principals sharing budgets, and the finishes giving amounts
// back, lock in one order and never deadlock (a deadlock would fail a
// call with an error).
func TestMultiInstanceBudgetAndParentHold(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	stores := []*postgres.Store{openInstance(t, schema), openInstance(t, schema)}
	ctx := t.Context()
	principals := []string{"alice", "bob", "carol", "dave"}
	inTeam := func(p string) bool { return p == "alice" || p == "bob" }

	// run admits n calls of 0.11 at `at`, finishing each admitted one with
	// finish (none when nil), and returns how many were admitted for the
	// team's members and for all.
	run := func(n int, at time.Time, finish func(i int) storage.ExecutionStatus) (team, all int32) {
		day := at.UTC().Format(time.DateOnly)
		teamDaily, orgDaily := budgetDaily("search", day, "1.10"), budgetDaily("acme", day, "3.30")
		var admittedTeam, admitted atomic.Int32
		errs := make([]error, n)
		quotes := make([]storage.Quote, n)
		for i := range quotes {
			quotes[i] = testQuote(principals[i%4], "tool-a", "0.11", at)
			require.NoError(t, stores[i%2].CreateQuote(ctx, quotes[i]))
		}
		goAll(n, func(i int) {
			p := quotes[i].Principal
			var b storage.Begin
			if inTeam(p) {
				// The team's nearest, as the gateway orders them; the
				// locks are taken in the ids' order whatever this one.
				b = budgetCall(quotes[i], fmt.Sprintf("%s-%d", day, i), at, []string{"search", "acme"}, teamDaily, orgDaily)
			} else {
				b = budgetCall(quotes[i], fmt.Sprintf("%s-%d", day, i), at, []string{"acme"}, orgDaily)
			}
			s := stores[(i/2)%2] // each principal on both instances
			if _, err := s.BeginExecution(ctx, b); err != nil {
				var le *storage.LimitError
				if !errors.As(err, &le) {
					errs[i] = err
				}
				return
			}
			admitted.Add(1)
			if inTeam(p) {
				admittedTeam.Add(1)
			}
			if finish != nil {
				errs[i] = s.FinishExecution(ctx, testFinish(b, finish(i), at.Add(time.Second)))
			}
		})
		for i, err := range errs {
			require.NoError(t, err, "call %d", i)
		}
		used := budgetUsed(t, stores[1], orgDaily)
		assert.Truef(t, used.LessThanOrEqual(dec("3.30")), "the organization's budget is over: %s", used)
		used = budgetUsed(t, stores[0], teamDaily)
		assert.Truef(t, used.LessThanOrEqual(dec("1.10")), "the team's budget is over: %s", used)
		return admittedTeam.Load(), admitted.Load()
	}

	// Held, nothing given back: the organization's limit binds exactly,
	// and the team never gets more than its own.
	team, all := run(240, t0, nil)
	assert.EqualValues(t, 30, all, "3.30 / 0.11 calls across the organization")
	assert.LessOrEqual(t, team, int32(10), "1.10 / 0.11 calls for the team")
	day := t0.Format(time.DateOnly)
	assert.Equal(t, "3.3", budgetUsed(t, stores[0], budgetDaily("acme", day, "3.30")).String())
	assertBudgetRollupsExact(t, schema)

	// The next day, a third of the admitted calls fail and give back while
	// others are admitted and completed.
	next := t0.Add(24 * time.Hour)
	run(300, next, func(i int) storage.ExecutionStatus {
		if i%3 == 0 {
			return storage.ExecutionFailed
		}
		return storage.ExecutionCompleted
	})
	assertBudgetRollupsExact(t, schema)

	// What was charged is what the organization's spend report shows, per
	// principal, and each completed call counts once.
	groups, err := stores[0].SpendSummary(ctx, storage.SpendQuery{Budget: "acme", FromDay: next.Format(time.DateOnly),
		GroupBy: toolgatetype.SpendByPrincipal})
	require.NoError(t, err)
	var charged decimal.Decimal
	var completed int64
	for _, g := range groups {
		charged = charged.Add(g.TotalUSD)
		completed += g.Count
	}
	assert.Truef(t, charged.Equal(dec("0.11").Mul(decimal.NewFromInt(completed))), "%s charged for %d calls", charged, completed)
	assert.Truef(t, charged.LessThanOrEqual(dec("3.30")), "charged %s", charged)
	assert.Positive(t, completed)
}

// TestBudgetRollupsStayExact runs calls in budgets through every outcome,
// a takeover, a resolution either way and Prune, and checks after each
// step that the budgets' rows are what their executions add up to.
func TestBudgetRollupsStayExact(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s, err := postgres.New(ctx, sharedPool(t), &postgres.Config{Schema: schema})
	require.NoError(t, err)
	other := openInstance(t, schema)

	var ambiguous []storage.Begin
	for i, status := range []storage.ExecutionStatus{
		storage.ExecutionCompleted, storage.ExecutionFailed, storage.ExecutionAmbiguous, storage.ExecutionAmbiguous,
		storage.ExecutionCompleted, storage.ExecutionRunning,
	} {
		at := t0.Add(time.Duration(i) * time.Hour)
		q := testQuote([]string{"alice", "bob"}[i%2], []string{"tool-a", "tool-b"}[i%2], "0.25", at)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := budgetCall(q, fmt.Sprintf("k%d", i), at, []string{"org", "team"})
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		switch status {
		case storage.ExecutionRunning:
			// Abandoned: another instance takes it over, and finishes it
			// without knowing it, with the form that reads its budgets.
			b.LeaseToken, b.Now = uuid.New(), at.Add(2*time.Minute)
			b.ExecutionID = uuid.New()
			res, err := other.BeginExecution(ctx, b)
			require.NoError(t, err)
			require.True(t, res.TookOver)
			b.ExecutionID = res.Execution.ID
			require.NoError(t, openInstance(t, schema).FinishExecution(ctx, testFinish(b, storage.ExecutionFailed, b.Now)))
		case storage.ExecutionAmbiguous:
			f := testFinish(b, status, at)
			f.Charged = false
			require.NoError(t, s.FinishExecution(ctx, f))
			ambiguous = append(ambiguous, b)
		default:
			require.NoError(t, s.FinishExecution(ctx, testFinish(b, status, at)))
		}
		assertBudgetRollupsExact(t, schema)
	}
	day := t0.Format(time.DateOnly)
	// Held: one completed of 0.25, then ambiguous twice, then completed.
	assert.Equal(t, "1", budgetUsed(t, s, budgetDaily("team", day, "100")).String())

	for i, b := range ambiguous {
		outcome := []storage.ExecutionStatus{storage.ExecutionCompleted, storage.ExecutionFailed}[i]
		_, err := other.ResolveExecution(ctx, storage.Resolve{ExecutionID: b.ExecutionID, Outcome: outcome,
			ResolvedBy: "pat", Now: t0.Add(time.Hour), Response: []byte(`{}`)})
		require.NoError(t, err)
		assertBudgetRollupsExact(t, schema)
	}
	assert.Equal(t, "0.75", budgetUsed(t, s, budgetDaily("org", day, "100")).String())

	// The month after next prunes executions and history: the budgets'
	// rows go with them, the current days' stay.
	_, err = s.Prune(ctx, storage.Prune{IdempotencyBefore: t0.AddDate(0, 2, 0), LedgerBefore: t0.AddDate(0, 2, 0), Limit: pruneAll})
	require.NoError(t, err)
	var left int
	require.NoError(t, sharedPool(t).QueryRow(ctx, `SELECT (SELECT count(*) FROM `+pgx.Identifier{schema, "budget_daily"}.Sanitize()+
		`) + (SELECT count(*) FROM `+pgx.Identifier{schema, "budget_spend"}.Sanitize()+
		`) + (SELECT count(*) FROM `+pgx.Identifier{schema, "budget_minute"}.Sanitize()+`)`).Scan(&left))
	assert.Zero(t, left, "the budgets' old days are pruned")
}

// TestBudgetMigrationKeepsCalls upgrades a schema holding calls of the
// version before budgets: they count in no budget, keep counting in
// their principal's limits, and calls in budgets run beside them.
func TestBudgetMigrationKeepsCalls(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	old, err := postgres.New(ctx, sharedPool(t), &postgres.Config{Schema: schema})
	require.NoError(t, err)
	q := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, old.CreateQuote(ctx, q))
	b := testBegin(q, "before", t0)
	_, err = old.BeginExecution(ctx, b)
	require.NoError(t, err)
	require.NoError(t, old.FinishExecution(ctx, testFinish(b, storage.ExecutionCompleted, t0)))

	// Back to the schema before migration 0017, as the earlier version
	// left it, with its call.
	pool := sharedPool(t)
	for _, stmt := range []string{
		`DROP TABLE {s}.budget_locks, {s}.budget_daily, {s}.budget_minute, {s}.budget_spend, {s}.alerts_sent`,
		`DROP INDEX {s}.executions_budgeted_idx`,
		`ALTER TABLE {s}.executions DROP COLUMN budgets, DROP COLUMN budget_days`,
		`DELETE FROM {s}.schema_migrations WHERE version = 17`,
	} {
		_, err := pool.Exec(ctx, replaceSchema(stmt, schema))
		require.NoError(t, err, stmt)
	}

	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	assertOneSetOfTables(t, schema)
	exec, err := s.GetExecution(ctx, b.ExecutionID)
	require.NoError(t, err)
	assert.Nil(t, exec.Budgets, "a call from before counts in no budget")
	assertUsed(t, s, "alice", "0.11", "1")

	q2 := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, q2))
	b2 := budgetCall(q2, "after", t0, []string{"team"}, budgetDaily("team", t0.Format(time.DateOnly), "0.11"))
	_, err = s.BeginExecution(ctx, b2)
	require.NoError(t, err)
	assertUsed(t, s, "alice", "0.22", "2")
	assert.Equal(t, "0.11", budgetUsed(t, s, budgetDaily("team", t0.Format(time.DateOnly), "1")).String())
	assertBudgetRollupsExact(t, schema)
}

// replaceSchema puts the quoted schema in place of {s}.
func replaceSchema(stmt, schema string) string {
	return strings.ReplaceAll(stmt, "{s}", pgx.Identifier{schema}.Sanitize())
}

// TestBudgetCallsLimitSplitsExactly places calls in a budget at and
// around minute boundaries and measures its calls limit from just around
// each of them, so that windows split every way between whole minutes and
// raw calls added or taken away: each counts exactly the calls created at
// or after its Since.
func TestBudgetCallsLimitSplitsExactly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newStore(t)
	offsets := []time.Duration{0, 10 * time.Second, 29 * time.Second, 30 * time.Second, 31 * time.Second,
		59*time.Second + 999999*time.Microsecond, time.Minute, 61 * time.Second, 90 * time.Second, 150 * time.Second}
	var at []time.Time
	for i, off := range offsets {
		when := t0.Add(off)
		q := testQuote([]string{"alice", "bob"}[i%2], []string{"tool-a", "tool-b"}[i%3%2], "0.10", when)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := budgetCall(q, fmt.Sprintf("k%d", i), when, []string{"team"})
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		if i%2 == 0 {
			require.NoError(t, s.FinishExecution(ctx, testFinish(b, storage.ExecutionFailed, when)))
		}
		at = append(at, when)
	}
	for _, x := range at {
		for _, d := range []time.Duration{-time.Microsecond, 0, time.Microsecond, 15 * time.Second, -15 * time.Second, -45 * time.Second} {
			since := x.Add(d)
			for _, tool := range []string{"", "tool-a"} {
				want := 0
				for i, c := range at {
					if !c.Before(since) && (tool == "" || []string{"tool-a", "tool-b"}[i%3%2] == tool) {
						want++
					}
				}
				l := storage.Limit{Budget: "team", ToolID: tool, Measure: storage.MeasureCalls, Since: since, Max: dec("100")}
				assert.Equal(t, fmt.Sprint(want), budgetUsed(t, s, l).String(), "calls of %q since %s", tool, since.Format(time.RFC3339Nano))
			}
		}
	}
}
