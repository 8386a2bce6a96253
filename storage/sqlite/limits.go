package sqlite

import (
	"context"
	"fmt"
	"math"
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
//   - between Since and the minute, raw spend_ledger rows, at most half a
//     minute's worth: added when the minute is after Since, and taken away
//     when it is before, since the minute's rollup then counts them.
//
// A window from a UTC midnight (the gateway's daily and monthly limits)
// reads day rows only; one from the last minute or hour (its rate limits)
// reads a minute row per tool and minute however many calls fell in it, and
// the raw rows of at most half a minute. So admission costs the same however
// long a principal's history and however busy its last hour. The cuts are
// the ones the ledger's minute and day columns bucket by, so the split is
// exact for any Since.

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
SELECT coalesce(sum(calls), 0), coalesce(sum(spend), 0) FROM (
	SELECT calls, spend FROM spend_daily
	WHERE principal = ?1 AND day >= ?3 AND (?2 = '' OR tool_id = ?2)
	UNION ALL
	SELECT calls, spend FROM spend_minute
	WHERE ?4 < ?5 AND principal = ?1 AND minute >= ?4 AND minute < ?5 AND (?2 = '' OR tool_id = ?2)
	UNION ALL
	SELECT ?6, iif(state = 'released', 0, ?6 * amount) FROM spend_ledger
	WHERE ?6 <> 0 AND principal = ?1 AND created_at >= ?7 AND created_at < ?8 AND (?2 = '' OR tool_id = ?2)
)`

// oldestSQL finds the creation of the oldest ledger row a limit counts,
// walking the principal's index from Since: ?1 the principal, ?2 the tool,
// ?3 Since, ?4 the measure.
const oldestSQL = `
SELECT created_at FROM spend_ledger
WHERE principal = ?1 AND created_at >= ?3 AND (?2 = '' OR tool_id = ?2)
	AND (?4 = 'calls' OR state <> 'released')
ORDER BY created_at LIMIT 1`

// checkMeasures refuses limits whose measure this store cannot count, so a
// typo never silently reads as "nothing used".
func checkMeasures(limits []storage.Limit) error {
	for i, l := range limits {
		if l.Measure != storage.MeasureSpend && l.Measure != storage.MeasureCalls {
			return fmt.Errorf("sqlite: limit %d: unknown measure %q", i, l.Measure)
		}
	}
	return nil
}

// measure returns what limit l's window holds for principal: a sum of
// amounts for MeasureSpend, a count for MeasureCalls.
func measure(q reader, principal string, l storage.Limit) (decimal.Decimal, error) {
	w := windowOf(l.Since)
	var calls, spend int64
	if err := q.queryRow(measureSQL, principal, l.ToolID, w.day, w.minuteFrom, w.minuteTo,
		w.rawSign, w.rawFrom, w.rawBefore).Scan(&calls, &spend); err != nil {
		return decimal.Decimal{}, translate(err)
	}
	if l.Measure == storage.MeasureCalls {
		return decimal.NewFromInt(calls), nil
	}
	return fromUnits(spend), nil
}

// oldest returns the creation of the oldest ledger row limit l counts for
// principal, or the zero time when it counts none.
func oldest(q reader, principal string, l storage.Limit) (time.Time, error) {
	var at int64
	err := translate(q.queryRow(oldestSQL, principal, l.ToolID, nanos(l.Since), string(l.Measure)).Scan(&at))
	switch {
	case err == nil:
		return fromNanos(at), nil
	case isNotFound(err):
		return time.Time{}, nil
	}
	return time.Time{}, err
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

// measureAll measures each limit; the caller has checked their measures.
func measureAll(q reader, principal string, limits []storage.Limit) ([]decimal.Decimal, error) {
	used := make([]decimal.Decimal, len(limits))
	for i, l := range limits {
		u, err := measure(q, principal, l)
		if err != nil {
			return nil, err
		}
		used[i] = u
	}
	return used, nil
}

var one = decimal.NewFromInt(1)
