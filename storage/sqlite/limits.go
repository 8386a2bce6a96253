package sqlite

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// A limit's window is measured in three parts, cut at the whole UTC minute
// nearest its Since (its minute) and at the first UTC midnight at or after
// Since (its day):
//
//   - from the day on, whole UTC days, summed from spend_daily, at most one
//     row per tool and day (a month's window is at most 31 days);
//   - from the minute to the day, whole UTC minutes, summed from
//     spend_minute, at most one row per tool and minute (less than a day's
//     worth; for a window from the last hour, at most 61);
//   - between Since and the minute, raw rows, at most half a minute's
//     worth: added when the minute is after Since, and taken away when it
//     is before, since the minute's rollup then counts them. The raw rows
//     are the calls the rollups count (see reservation.go): executions
//     still counted, read on their (principal, created_at) index
//     executions_principal_created, and the ledger's archived rows, read on
//     spend_ledger_principal_created_at.
//
// A window from a UTC midnight (the gateway's daily and monthly limits)
// reads day rows only; one from the last minute or hour (its rate limits)
// reads a minute row per tool and minute however many calls fell in it, and
// the raw rows of at most half a minute. So admission costs the same however
// long a principal's history and however busy its last hour. The cuts are
// the ones the ledger's minute and day columns bucket by, so the split is
// exact for any Since: the executions' minute and day are computed from
// created_at by the same floor division (in the triggers of
// 0010_reservation_on_execution.sql) as the ledger's columns were written.

// minutesPerDay converts a day number to the number of its first minute.
const minutesPerDay = nanosPerDay / nanosPerMinute

// window is where a limit's Since cuts its rollups.
type window struct {
	day                int64 // day rows from this one on
	minuteFrom         int64 // minute rows in [minuteFrom, minuteTo)
	minuteTo           int64
	rawSign            int64 // +1 adds raw rows, -1 takes them away, 0 reads none
	rawFrom, rawBefore int64 // raw rows created in [rawFrom, rawBefore)
}

func windowOf(since time.Time) window {
	s := nanos(since)
	if s <= math.MinInt64+1 {
		// Since the beginning: every row is in some day's rollup.
		return window{day: math.MinInt64}
	}
	w := window{day: ceilDiv(s, nanosPerDay)}
	w.minuteTo = w.day * minutesPerDay
	w.minuteFrom = floorDiv(s, nanosPerMinute)
	// Round to the nearest minute, unless that minute would start past the
	// end of the representable range (the year 2262).
	if s-w.minuteFrom*nanosPerMinute >= nanosPerMinute/2 && w.minuteFrom < math.MaxInt64/nanosPerMinute {
		w.minuteFrom++
	}
	cut := w.minuteFrom * nanosPerMinute
	switch {
	case s < cut:
		w.rawSign, w.rawFrom, w.rawBefore = 1, s, cut
	case s > cut:
		w.rawSign, w.rawFrom, w.rawBefore = -1, cut, s
	}
	return w
}

// measureSQL sums what one limit's window holds: calls and spend. ?1 the
// principal, ?2 the tool (” for all), then the window's cuts. The tool
// filter is an OR rather than two statements: every scan it filters is
// already narrowed to one principal and a bounded range of the primary key
// or index.
const measureSQL = `
SELECT coalesce(sum(calls), 0) AS calls, coalesce(sum(spend), 0) AS spend FROM (
	SELECT calls, spend FROM spend_daily
	WHERE principal = ?1 AND day >= ?3 AND (?2 = '' OR tool_id = ?2)
	UNION ALL
	SELECT calls, spend FROM spend_minute
	WHERE ?4 < ?5 AND principal = ?1 AND minute >= ?4 AND minute < ?5 AND (?2 = '' OR tool_id = ?2)
	UNION ALL
	SELECT ?6, iif(state = 'released', 0, ?6 * amount) FROM spend_ledger
	WHERE ?6 <> 0 AND principal = ?1 AND created_at >= ?7 AND created_at < ?8 AND (?2 = '' OR tool_id = ?2)
	UNION ALL
	SELECT ?6, iif(` + spendsSQL + `, ?6 * amount, 0) FROM executions
	WHERE ?6 <> 0 AND principal = ?1 AND created_at >= ?7 AND created_at < ?8 AND counted = 1 AND (?2 = '' OR tool_id = ?2)
)`

// measureArgs is how many arguments measureSQL takes.
const measureArgs = 8

// measureBatch is how many limits one statement measures at most. A call
// is admitted under a handful (a gateway's daily, monthly, per-minute and
// per-hour limits, and a tool's); each is a statement's work, but one
// statement for all of them costs one preparation, binding and step
// through the driver rather than one each, on the writer that every call
// waits for.
const measureBatch = 8

// measureManySQL is measureSQL for n limits in one statement (see
// batched).
var measureManySQL = batched(measureSQL, measureArgs)

// batched builds, for each n up to measureBatch, the statement that runs
// single, a one-row query of (calls, spend) taking args numbered
// arguments, for n limits at once: one row of n (calls, spend) pairs,
// limit i's arguments numbered from i*args. The statements are built once.
func batched(single string, args int) [measureBatch + 1]string {
	var out [measureBatch + 1]string
	param := regexp.MustCompile(`\?(\d)`)
	for n := 1; n <= measureBatch; n++ {
		var cols, from strings.Builder
		for i := range n {
			renumbered := param.ReplaceAllStringFunc(single, func(m string) string {
				k, _ := strconv.Atoi(m[1:])
				return "?" + strconv.Itoa(i*args+k)
			})
			if i > 0 {
				cols.WriteString(", ")
				from.WriteString(", ")
			}
			fmt.Fprintf(&cols, "m%d.calls, m%d.spend", i, i)
			fmt.Fprintf(&from, "(%s) m%d", renumbered, i)
		}
		out[n] = "SELECT " + cols.String() + " FROM " + from.String()
	}
	return out
}

// oldestSQL finds the creation of the oldest call a limit counts, the
// older of the oldest archived ledger row and the oldest counted
// execution, each found walking the principal's index from Since: ?1 the
// principal, ?2 the tool, ?3 Since, ?4 the measure. NULL when it counts
// none.
const oldestSQL = `
SELECT min(created_at) FROM (
	SELECT created_at FROM (
		SELECT created_at FROM spend_ledger
		WHERE principal = ?1 AND created_at >= ?3 AND (?2 = '' OR tool_id = ?2)
			AND (?4 = 'calls' OR state <> 'released')
		ORDER BY created_at LIMIT 1)
	UNION ALL
	SELECT created_at FROM (
		SELECT created_at FROM executions
		WHERE principal = ?1 AND created_at >= ?3 AND counted = 1 AND (?2 = '' OR tool_id = ?2)
			AND (?4 = 'calls' OR ` + spendsSQL + `)
		ORDER BY created_at LIMIT 1)
)`

// checkMeasures refuses limits whose measure this store cannot count, so a
// typo never silently reads as "nothing used", and a budget's first day
// that is not a day, which would compare as text with the stored ones.
func checkMeasures(limits []storage.Limit) error {
	for i, l := range limits {
		if l.Measure != storage.MeasureSpend && l.Measure != storage.MeasureCalls {
			return fmt.Errorf("sqlite: limit %d: unknown measure %q", i, l.Measure)
		}
		if l.Budget != "" && l.Measure == storage.MeasureSpend && l.FromDay != "" {
			if err := checkDay(l.FromDay); err != nil {
				return fmt.Errorf("sqlite: limit %d: %w", i, err)
			}
		}
	}
	return nil
}

// measure returns what limit l's window holds for principal: a sum of
// amounts for MeasureSpend, a count for MeasureCalls.
func measure(q reader, principal string, l storage.Limit) (decimal.Decimal, error) {
	used, err := measureAll(q, principal, []storage.Limit{l})
	if err != nil {
		return decimal.Decimal{}, err
	}
	return used[0], nil
}

// oldest returns the creation of the oldest call limit l counts for
// principal (or, for a budget's limit, for every member), or the zero time
// when it counts none.
func oldest(q reader, principal string, l storage.Limit) (time.Time, error) {
	if l.Budget != "" {
		return budgetOldest(q, l)
	}
	var at *int64
	if err := q.queryRow(oldestSQL, principal, l.ToolID, nanos(l.Since), string(l.Measure)).Scan(&at); err != nil {
		return time.Time{}, translate(err)
	}
	return nullNanos(at), nil
}

// MeasureLimits returns what each limit's window already holds for the
// principal, in-flight reservations included. It reads on the read pool
// and takes no lock: it is a preview, and only BeginExecution enforces.
func (s *Store) MeasureLimits(ctx context.Context, principal string, limits []storage.Limit) ([]decimal.Decimal, error) {
	if err := checkMeasures(limits); err != nil {
		return nil, err
	}
	return measureAll(s.pool(ctx), principal, limits)
}

// measureAll measures each limit, measureBatch to a statement, the
// principal's own apart from the budgets' (internal/spendlimits), so that a call
// in no budget runs only the statements it ran before budgets existed;
// the caller has checked their measures.
func measureAll(q reader, principal string, limits []storage.Limit) ([]decimal.Decimal, error) {
	used := make([]decimal.Decimal, len(limits))
	own, budgets := make([]int, 0, len(limits)), []int(nil)
	for i, l := range limits {
		if l.Budget != "" {
			budgets = append(budgets, i)
		} else {
			own = append(own, i)
		}
	}
	err := measureBatches(q, limits, own, used, &measureManySQL, func(args []any, l storage.Limit) []any {
		w := windowOf(l.Since)
		return append(args, principal, l.ToolID, w.day, w.minuteFrom, w.minuteTo, w.rawSign, w.rawFrom, w.rawBefore)
	})
	if err != nil {
		return nil, err
	}
	if err := measureBatches(q, limits, budgets, used, &budgetMeasureManySQL, budgetMeasureArgs); err != nil {
		return nil, err
	}
	return used, nil
}

// measureBatches measures the limits at indexes, measureBatch to a
// statement of stmts (see batched), with the arguments each adds to args,
// into used at the same indexes.
func measureBatches(q reader, limits []storage.Limit, indexes []int, used []decimal.Decimal,
	stmts *[measureBatch + 1]string, add func(args []any, l storage.Limit) []any,
) error {
	for from := 0; from < len(indexes); from += measureBatch {
		batch := indexes[from:min(from+measureBatch, len(indexes))]
		var args []any
		for _, i := range batch {
			args = add(args, limits[i])
		}
		sums := make([]int64, 2*len(batch))
		dest := make([]any, len(sums))
		for i := range sums {
			dest[i] = &sums[i]
		}
		if err := q.queryRow(stmts[len(batch)], args...).Scan(dest...); err != nil {
			return translate(err)
		}
		for k, i := range batch {
			if limits[i].Measure == storage.MeasureCalls {
				used[i] = decimal.NewFromInt(sums[2*k])
			} else {
				used[i] = fromUnits(sums[2*k+1])
			}
		}
	}
	return nil
}

var one = decimal.NewFromInt(1)
