package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// A limit's window is measured in three parts, cut at the whole UTC minute
// nearest its Since (its minute) and at the first UTC midnight at or after
// Since (its boundary):
//
//   - from the boundary on, whole UTC days, summed from spend_daily, at most
//     one row per tool and day (a month's window is at most 31 days);
//   - from the minute to the boundary, whole UTC minutes, summed from
//     spend_minute, at most one row per tool and minute (less than a day's
//     worth; for a window from the last hour, at most 61);
//   - between Since and the minute, raw rows, at most half a minute's
//     worth: added when the minute is after Since, and taken away when it
//     is before, since the minute's rollup then counts them. The raw rows
//     are what the rollups count (see reservation.go): the executions that
//     still count, through executions_principal_created_idx, and the
//     archive in spend_ledger, through spend_ledger_principal_idx. Recent
//     windows find the calls among the executions, and the archive's range
//     empty; a window of old history, the reverse.
//
// A window that starts at a UTC midnight (the gateway's daily and monthly
// limits) reads neither minute rows nor raw rows. One that starts within
// the last minute or hour (its rate limits) reads a minute row per tool and
// minute however many calls fell in it, and the raw rows of at most half a
// minute, which the per-minute rate limit bounds: admission does not cost
// more as the principal's history grows. (Cutting at the next minute
// instead would read up to a whole minute of raw rows per window, twice as
// many on average.) The cuts are whole UTC minutes, which is how the
// rollups bucket rows, so the split is exact for any Since: the rollups
// count exactly the raw rows.

// limitsCTE is the WITH item "limits" that measures each limit: its 1-based
// position i, its measure, tool and Since, its max and what its window
// already holds (used). $1 is the principal and $2 to $7 are the columns of
// limitArgs. The tool filter is an OR rather than two statements: every scan
// it filters is already narrowed to one principal and a bounded range.
//
// The arrays are unnested from sub-selects so that the planner cannot see
// how many limits there are. Given the values it would count them, and the
// plan for those exact values would always look cheaper than the generic
// plan, which guesses ten: the plan cache would then plan every execution
// afresh, which cost more than executing it.
const limitsCTE = `limits AS (
	SELECT l.i, l.measure, l.tool_id, l.since, l.max::numeric AS max,
		CASE l.measure WHEN 'spend' THEN COALESCE(d.spend, 0) + COALESCE(m.spend, 0) + r.sign * COALESCE(r.spend, 0)
			ELSE COALESCE(d.calls, 0) + COALESCE(m.calls, 0) + r.sign * COALESCE(r.calls, 0) END AS used
	FROM unnest((SELECT $2::text[]), (SELECT $3::text[]), (SELECT $4::timestamptz[]),
		(SELECT $5::timestamptz[]), (SELECT $6::timestamptz[]), (SELECT $7::text[]))
		WITH ORDINALITY AS l(measure, tool_id, since, minute, boundary, max, i)
	CROSS JOIN LATERAL (
		SELECT sum(s.calls) AS calls, sum(s.spend_usd) AS spend FROM {schema}.spend_daily s
		WHERE s.principal = $1 AND s.day >= (l.boundary AT TIME ZONE 'UTC')::date
			AND (l.tool_id = '' OR s.tool_id = l.tool_id)
	) d
	CROSS JOIN LATERAL (
		SELECT sum(s.calls) AS calls, sum(s.spend_usd) AS spend FROM {schema}.spend_minute s
		WHERE l.minute < l.boundary -- no scan at all for a window from a midnight
			AND s.principal = $1 AND s.minute >= l.minute AND s.minute < l.boundary
			AND (l.tool_id = '' OR s.tool_id = l.tool_id)
	) m
	CROSS JOIN LATERAL (
		SELECT CASE WHEN l.since < l.minute THEN 1 ELSE -1 END AS sign,
			sum(raw.calls) AS calls, sum(raw.spend) AS spend
		FROM (
			SELECT count(*) AS calls, sum(e.amount_usd) FILTER (WHERE ` + executionHoldsSpendSQL + `) AS spend
			FROM {schema}.executions e
			WHERE l.since <> l.minute -- no scan at all for a window from a whole minute
				AND e.principal = $1 AND e.created_at >= least(l.since, l.minute)
				AND e.created_at < greatest(l.since, l.minute)
				AND e.counted AND (l.tool_id = '' OR e.tool_id = l.tool_id)
			UNION ALL
			SELECT count(*), sum(s.amount_usd) FILTER (WHERE s.state <> 'released')
			FROM {schema}.spend_ledger s
			WHERE l.since <> l.minute
				AND s.principal = $1 AND s.created_at >= least(l.since, l.minute)
				AND s.created_at < greatest(l.since, l.minute)
				AND (l.tool_id = '' OR s.tool_id = l.tool_id)
		) raw
	) r
)`

// limitArgs are limits as the array parameters $2 to $7 of limitsCTE.
type limitArgs struct {
	measures []string
	toolIDs  []string
	since    []time.Time
	minute   []time.Time
	boundary []time.Time
	max      []string
}

func newLimitArgs(limits []storage.Limit) (limitArgs, error) {
	a := limitArgs{
		measures: make([]string, len(limits)),
		toolIDs:  make([]string, len(limits)),
		since:    make([]time.Time, len(limits)),
		minute:   make([]time.Time, len(limits)),
		boundary: make([]time.Time, len(limits)),
		max:      make([]string, len(limits)),
	}
	for i, l := range limits {
		switch l.Measure {
		case storage.MeasureSpend, storage.MeasureCalls:
		default:
			return limitArgs{}, fmt.Errorf("postgres: unknown limit measure %q", l.Measure)
		}
		a.measures[i] = string(l.Measure)
		a.toolIDs[i] = l.ToolID
		a.since[i] = l.Since
		// Round counts from the zero time, a UTC midnight, so it gives a
		// whole UTC minute; a midnight is one too, so the minute is never
		// after the boundary.
		a.minute[i] = l.Since.UTC().Round(time.Minute)
		a.boundary[i] = nextUTCMidnight(l.Since)
		a.max[i] = l.Max.String()
	}
	return a, nil
}

// params returns the limits as $2 to $7.
func (a limitArgs) params() []any {
	return []any{a.measures, a.toolIDs, a.since, a.minute, a.boundary, a.max}
}

// nextUTCMidnight returns the first UTC midnight at or after t. Truncate
// counts from the zero time, itself a UTC midnight, so it rounds down to one.
func nextUTCMidnight(t time.Time) time.Time {
	m := t.UTC().Truncate(24 * time.Hour)
	if m.Before(t) {
		m = m.Add(24 * time.Hour)
	}
	return m
}

// MeasureLimits returns what each limit's window already holds for the
// principal, in-flight reservations included, in one statement. It takes no
// lock: it is a preview, and only BeginExecution enforces.
func (s *Store) MeasureLimits(ctx context.Context, principal string, limits []storage.Limit) ([]decimal.Decimal, error) {
	if len(limits) == 0 {
		return nil, nil
	}
	query, args, err := s.measureSQL(principal, limits)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, translate(err)
	}
	return scanMeasured(rows, len(limits))
}

// measureLimitsSQL measures limits: $1 the principal, then limitArgs.params.
// It returns one row per limit, in order, with what its window holds.
const measureLimitsSQL = `WITH ` + limitsCTE + ` SELECT used::text FROM limits ORDER BY i`

// scanMeasured reads and closes the rows of measureLimitsSQL for n limits.
func scanMeasured(rows pgx.Rows, n int) ([]decimal.Decimal, error) {
	defer rows.Close()
	out := make([]decimal.Decimal, 0, n)
	for rows.Next() {
		var used string
		if err := rows.Scan(&used); err != nil {
			return nil, translate(err)
		}
		d, err := parseDecimal(used)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	if len(out) != n {
		return nil, fmt.Errorf("postgres: measured %d of %d limits", len(out), n)
	}
	return out, nil
}
