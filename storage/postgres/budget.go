package postgres

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// A call admitted with budgets (storage.Begin.Budgets) counts in each of
// them, on the day its BudgetDay gives (migration 0017):
//
//   - budget_daily holds, per budget, day and tool, the calls and the
//     amounts they hold or were charged: the admission adds the call, a
//     finish or resolution that releases takes its amount back. A
//     budget's spend limit sums its rows from the limit's FromDay on.
//   - budget_spend holds what was charged, per budget, day, principal and
//     tool, for SpendSummary: a completed finish or resolution adds to it.
//   - budget_minute holds, per budget, UTC minute and tool, the calls
//     admitted: a budget's calls limit sums its whole minutes and counts
//     the raw executions of at most half a minute, through
//     executions_budgeted_idx.
//
// Admissions counting in one budget take turns on its budget_locks row,
// after the principal's lock and in the order of the budgets' ids (byte
// order, COLLATE "C", as Go sorts), so that two admissions sharing budgets
// never hold one each and wait for the other's.
//
// Every writer of the rollups locks a call's rows in one order: the
// principal's (spend_daily, then spend_minute), then the budgets' rows in
// the order of their ids. Admissions, finishes and resolutions each wait
// for the principal's writes before the budgets' (a count of the earlier
// item), and order the budgets' by id; Prune skips what is locked. So no
// two of them can wait on each other in a cycle.
//
// A call in no budget pays nothing for this: its admission, its limits and
// (when this Store admitted it) its finish run the statements they ran
// before budgets existed, which name none of these tables.

// budgetLimitArgs are the limits of budgets among a call's limits, as the
// array parameters of budgetLimitsCTE, and where the principal's own
// limits stand among all of them.
type budgetLimitArgs struct {
	pos       []int32 // each budget limit's 1-based position among all
	budgets   []string
	measures  []string
	toolIDs   []string
	since     []time.Time
	minute    []time.Time // the whole UTC minute nearest since
	fromDays  []string
	max       []string
	principal []int32 // each principal limit's 1-based position among all
}

// splitLimits separates the principal's own limits, measured by limitsCTE
// as before, from the budgets' (Limit.Budget set). budgets is false when
// there are none of the latter, and the statements without budgets apply.
func splitLimits(limits []storage.Limit) (own []storage.Limit, b budgetLimitArgs, budgets bool, err error) {
	for i, l := range limits {
		switch l.Measure {
		case storage.MeasureSpend, storage.MeasureCalls:
		default:
			return nil, budgetLimitArgs{}, false, fmt.Errorf("postgres: unknown limit measure %q", l.Measure)
		}
		if l.Budget == "" {
			own = append(own, l)
			b.principal = append(b.principal, int32(i+1))
			continue
		}
		budgets = true
		fromDay := "-infinity" // no first day: the whole history kept
		if l.Measure == storage.MeasureSpend && l.FromDay != "" {
			if err := checkDay(l.FromDay); err != nil {
				return nil, budgetLimitArgs{}, false, fmt.Errorf("postgres: limit of budget %q: FromDay: %w", l.Budget, err)
			}
			fromDay = l.FromDay
		}
		b.pos = append(b.pos, int32(i+1))
		b.budgets = append(b.budgets, l.Budget)
		b.measures = append(b.measures, string(l.Measure))
		b.toolIDs = append(b.toolIDs, l.ToolID)
		b.since = append(b.since, l.Since)
		b.minute = append(b.minute, l.Since.UTC().Round(time.Minute))
		b.fromDays = append(b.fromDays, fromDay)
		b.max = append(b.max, l.Max.String())
	}
	return own, b, budgets, nil
}

// params returns the arrays in the order budgetLimitsCTE numbers them.
func (b budgetLimitArgs) params() []any {
	return []any{b.pos, b.budgets, b.measures, b.toolIDs, b.since, b.minute, b.fromDays, b.max, b.principal}
}

// checkDay checks that day is a calendar day as YYYY-MM-DD.
func checkDay(day string) error {
	if _, err := time.Parse(time.DateOnly, day); err != nil {
		return fmt.Errorf("%q is not a day as YYYY-MM-DD", day)
	}
	return nil
}

// budgetDayArgs are a call's budgets and its day in each, as the two
// array parameters the admission records on its execution, and the
// budgets whose locks it takes: those and the budgets of its limits,
// each once, in byte order.
func budgetDayArgs(days []storage.BudgetDay, b budgetLimitArgs) (budgets, dayList, locks []string, err error) {
	seen := make(map[string]bool, len(days))
	for _, d := range days {
		if d.Budget == "" {
			return nil, nil, nil, fmt.Errorf("postgres: a call's budget has no id")
		}
		if seen[d.Budget] {
			return nil, nil, nil, fmt.Errorf("postgres: a call counts in budget %q twice", d.Budget)
		}
		seen[d.Budget] = true
		if err := checkDay(d.Day); err != nil {
			return nil, nil, nil, fmt.Errorf("postgres: day of budget %q: %w", d.Budget, err)
		}
		budgets = append(budgets, d.Budget)
		dayList = append(dayList, d.Day)
	}
	locks = slices.Clone(budgets)
	for _, id := range b.budgets {
		if !seen[id] {
			seen[id] = true
			locks = append(locks, id)
		}
	}
	slices.Sort(locks)
	return budgets, dayList, locks, nil
}

// budgetLimitsCTE returns the WITH items that measure the budgets' limits
// beside the principal's (limitsCTE, which must come first): blimits, what
// each budget limit's window holds, and checked, every limit with its
// 1-based position among all of them and its budget (NULL for the
// principal's own). p is the number of the first of the parameters
// budgetLimitArgs.params gives.
//
// A spend limit sums the budget's day rows from its first day, at most a
// row per tool and day of its window. A calls limit is cut at the whole
// UTC minute nearest its Since, as limitsCTE cuts the principal's: whole
// minutes from budget_minute, at most a row per tool and minute, and the
// budget's raw executions between Since and that minute (added when the
// minute is after Since, taken away when before, since its row counts
// them), at most half a minute's worth, which executions_budgeted_idx finds
// among the budgeted calls of that span only. Each lateral scan is
// skipped for a limit of the other measure (a one-time filter).
func budgetLimitsCTE(p int) string {
	n := func(k int) string { return fmt.Sprintf("$%d", p+k) }
	return `,
blimits AS (
	SELECT l.i, l.budget, l.measure, l.tool_id, l.since, l.max::numeric AS max,
		CASE l.measure WHEN 'spend' THEN COALESCE(d.spend, 0)
			ELSE COALESCE(m.calls, 0) + r.sign * r.calls END AS used
	FROM unnest((SELECT ` + n(0) + `::int[]), (SELECT ` + n(1) + `::text[]), (SELECT ` + n(2) + `::text[]),
		(SELECT ` + n(3) + `::text[]), (SELECT ` + n(4) + `::timestamptz[]), (SELECT ` + n(5) + `::timestamptz[]),
		(SELECT ` + n(6) + `::text[]), (SELECT ` + n(7) + `::text[]))
		AS l(i, budget, measure, tool_id, since, minute, from_day, max)
	CROSS JOIN LATERAL (
		SELECT sum(s.spend_usd) AS spend FROM {schema}.budget_daily s
		WHERE l.measure = 'spend' AND s.budget = l.budget AND s.day >= l.from_day::date
			AND (l.tool_id = '' OR s.tool_id = l.tool_id)
	) d
	CROSS JOIN LATERAL (
		SELECT sum(s.calls) AS calls FROM {schema}.budget_minute s
		WHERE l.measure = 'calls' AND s.budget = l.budget AND s.minute >= l.minute
			AND (l.tool_id = '' OR s.tool_id = l.tool_id)
	) m
	CROSS JOIN LATERAL (
		SELECT CASE WHEN l.since < l.minute THEN 1 ELSE -1 END AS sign, count(*) AS calls
		FROM {schema}.executions e
		WHERE l.measure = 'calls' AND l.since <> l.minute AND e.budgets IS NOT NULL
			AND e.created_at >= least(l.since, l.minute) AND e.created_at < greatest(l.since, l.minute)
			AND l.budget = ANY(e.budgets) AND (l.tool_id = '' OR e.tool_id = l.tool_id)
	) r
),
checked AS (
	SELECT (SELECT ` + n(8) + `::int[])[l.i] AS i, NULL::text AS budget, l.measure, l.tool_id, l.since, l.max, l.used
	FROM limits l
	UNION ALL
	SELECT i, budget, measure, tool_id, since, max, used FROM blimits
)`
}

// budgetOldestSQL is the creation time of the oldest call a failed
// budget limit l counts, for its LimitFailure.Oldest: for a calls limit,
// the oldest of its raw executions. A spend limit counts whole days of the
// budget's calendar and frees up when its window ends, so it reports
// none, and a refused call never walks a month of the budget's calls.
const budgetOldestSQL = `CASE WHEN l.measure = 'calls' THEN (
		SELECT min(e.created_at) FROM {schema}.executions e
		WHERE e.budgets IS NOT NULL AND e.created_at >= l.since
			AND l.budget = ANY(e.budgets) AND (l.tool_id = '' OR e.tool_id = l.tool_id)
	) END`

// measureBudgetLimitsSQL is measureLimitsSQL with budget limits: $1 the
// principal, $2 to $7 its own limits (limitArgs), $8 to $16 the budgets'
// (budgetLimitArgs).
var measureBudgetLimitsSQL = `WITH ` + limitsCTE + budgetLimitsCTE(8) + ` SELECT used::text FROM checked ORDER BY i`

// measureSQL returns the statement that measures limits for principal,
// and its arguments: measureLimitsSQL when no limit is a budget's, so that
// such a call names no table of budgets.
func (s *Store) measureSQL(principal string, limits []storage.Limit) (string, []any, error) {
	own, b, budgets, err := splitLimits(limits)
	if err != nil {
		return "", nil, err
	}
	if !budgets {
		args, err := newLimitArgs(limits)
		if err != nil {
			return "", nil, err
		}
		return s.sql(measureLimitsSQL), append([]any{principal}, args.params()...), nil
	}
	args, err := newLimitArgs(own)
	if err != nil {
		return "", nil, err
	}
	params := append([]any{principal}, args.params()...)
	return s.sql(measureBudgetLimitsSQL), append(params, b.params()...), nil
}

// ensureBudgetLocksSQL creates the lock rows of budgets $1 (in byte order)
// that do not exist yet, and waits for any being created by a concurrent
// admission; it locks nothing. lockBudgetsSQL, the next statement, then
// locks them all in that order: its snapshot, taken after this statement,
// sees every one. (Inserting and locking in one statement would lock the
// existing rows first and the new ones after, out of order.)
const ensureBudgetLocksSQL = `
	INSERT INTO {schema}.budget_locks (budget)
	SELECT b FROM unnest($1::text[]) AS b ORDER BY b COLLATE "C"
	ON CONFLICT (budget) DO NOTHING`

// lockBudgetsSQL takes the admission locks of budgets $1 until the
// transaction ends, in byte order of their ids: the rows are locked as the
// sort returns them. A lock of an existing row writes nothing (FOR NO KEY
// UPDATE), as the principal's does.
const lockBudgetsSQL = `
	SELECT count(*) FROM (
		SELECT FROM {schema}.budget_locks WHERE budget = ANY($1::text[])
		ORDER BY budget COLLATE "C"
		FOR NO KEY UPDATE
	) AS held`

// knownLocks is the lock rows (of budgets, or of principals for batched
// admissions) a Store has seen committed, so that their admissions need
// not ask for them to be created: the rows are never deleted. Forgetting
// one only costs a statement.
type knownLocks struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

func newKnownLocks() *knownLocks { return &knownLocks{ids: map[string]struct{}{}} }

// all reports whether every one of ids is known.
func (k *knownLocks) all(ids []string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, id := range ids {
		if _, ok := k.ids[id]; !ok {
			return false
		}
	}
	return true
}

// add remembers ids as existing.
func (k *knownLocks) add(ids []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, id := range ids {
		put(k.ids, id, struct{}{})
	}
}

// budgetRollupSQL is the admission's WITH items that count the call in
// each of its budgets' day rows (budget_rollup) and then minute rows
// (budget_minute_rollup), after the principal's rollups (they wait for
// minute_rollup's count) and in byte order of the budgets' ids. $12 is the
// tool, $13 the amount and $16 the time, as in admitSQL; budgets and days
// are the numbers of the two array parameters.
func budgetRollupSQL(budgets, days string) string {
	return `,
budget_rollup AS (
	INSERT INTO {schema}.budget_daily AS d (budget, day, tool_id, calls, spend_usd)
	SELECT x.budget, x.day::date, $12::text, 1, $13::numeric
	FROM unnest(` + budgets + `::text[], ` + days + `::text[]) AS x(budget, day)
	WHERE EXISTS (SELECT FROM used_quote) AND (SELECT count(*) FROM minute_rollup) >= 0
	ORDER BY x.budget COLLATE "C"
	ON CONFLICT (budget, day, tool_id) DO UPDATE
	SET calls = d.calls + 1, spend_usd = d.spend_usd + EXCLUDED.spend_usd
	RETURNING 1
),
budget_minute_rollup AS (
	INSERT INTO {schema}.budget_minute AS m (budget, minute, tool_id, calls)
	SELECT x.budget, date_trunc('minute', $16::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', $12::text, 1
	FROM unnest(` + budgets + `::text[]) AS x(budget)
	WHERE EXISTS (SELECT FROM used_quote) AND (SELECT count(*) FROM budget_rollup) >= 0
	ORDER BY x.budget COLLATE "C"
	ON CONFLICT (budget, minute, tool_id) DO UPDATE
	SET calls = m.calls + 1
)`
}

// budgetSettleSQL returns the WITH items of a finish or a resolution that
// settle a call's amount on its budgets: budget_calls, the call's budgets
// and days; budget_locked and budget_released, which lock its day rows in
// byte order of the budgets' ids and take a released amount back;
// budget_charged, which adds a charged amount to what the budgets' spend
// reports. source is a relation of the settled execution with its
// principal, tool_id, tool_slug, amount_usd, budgets and budget_days;
// releases and charges are the conditions of each outcome; after is a
// condition that makes the items wait for the statement's other rollup
// writes (the principal's, and the usage counters), so every rollup row is
// locked in the one order.
//
// A day row that Prune removed is left removed: the day is older than any
// limit looks at.
func budgetSettleSQL(source, releases, charges, after string) string {
	return `,
budget_calls AS MATERIALIZED (
	SELECT x.budget, x.day, e.principal, e.tool_id, COALESCE(NULLIF(e.tool_slug, ''), e.tool_id) AS tool,
		e.amount_usd
	FROM ` + source + ` e CROSS JOIN LATERAL unnest(e.budgets, e.budget_days) AS x(budget, day)
	WHERE e.budgets IS NOT NULL AND ` + after + `
),
budget_locked AS MATERIALIZED (
	SELECT d.budget, d.day, d.tool_id FROM {schema}.budget_daily d
	JOIN budget_calls c ON d.budget = c.budget AND d.day = c.day AND d.tool_id = c.tool_id
	WHERE ` + releases + `
	ORDER BY d.budget COLLATE "C"
	FOR NO KEY UPDATE OF d
),
budget_released AS (
	UPDATE {schema}.budget_daily d SET spend_usd = d.spend_usd - c.amount_usd
	FROM budget_calls c JOIN budget_locked l USING (budget, day, tool_id)
	WHERE d.budget = c.budget AND d.day = c.day AND d.tool_id = c.tool_id
	RETURNING 1
),
budget_charged AS (
	INSERT INTO {schema}.budget_spend AS s (budget, day, principal, tool, calls, spend_usd)
	SELECT budget, day, principal, tool, 1, amount_usd FROM budget_calls
	WHERE ` + charges + `
	ORDER BY budget COLLATE "C"
	ON CONFLICT (budget, day, principal, tool) DO UPDATE
	SET calls = s.calls + 1, spend_usd = s.spend_usd + EXCLUDED.spend_usd
	RETURNING 1
)`
}

// budgetSettledSQL is a condition that holds once budgetSettleSQL's writes
// are done, for an item that must come after them (a receipt).
const budgetSettledSQL = `(SELECT count(*) FROM budget_released) + (SELECT count(*) FROM budget_charged) >= 0`

// dayString formats a date read back from the database as YYYY-MM-DD.
func dayString(t time.Time) string { return t.Format(time.DateOnly) }

// budgetDays pairs an execution's budgets with its days, nil when it
// counts in none.
func budgetDays(budgets []string, days []time.Time) []storage.BudgetDay {
	if len(budgets) == 0 {
		return nil
	}
	out := make([]storage.BudgetDay, len(budgets))
	for i, b := range budgets {
		out[i] = storage.BudgetDay{Budget: b}
		if i < len(days) {
			out[i].Day = dayString(days[i])
		}
	}
	return out
}

// plainCalls is the executions a Store admitted (or took over) in no
// budget and has not finished yet. Their finish runs the statement of a
// call in no budget, which names no table of budgets; any other finish,
// of an execution this Store does not know (admitted elsewhere, or
// forgotten), runs the form that settles whatever budgets the execution
// has. Forgetting one costs its finish only the tables it names.
type plainCalls struct {
	mu  sync.Mutex
	ids map[uuid.UUID]struct{}
}

func newPlainCalls() *plainCalls { return &plainCalls{ids: map[uuid.UUID]struct{}{}} }

// add remembers id as in no budget.
func (p *plainCalls) add(id uuid.UUID) {
	p.mu.Lock()
	put(p.ids, id, struct{}{})
	p.mu.Unlock()
}

// take reports whether id is remembered as in no budget, and forgets it:
// an execution is finished once.
func (p *plainCalls) take(id uuid.UUID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.ids[id]
	delete(p.ids, id)
	return ok
}

// btoi indexes a form by a condition.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
