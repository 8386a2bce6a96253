package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// batcher is what measure needs from a pool or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// measurement is what one limit's window already holds.
type measurement struct {
	used   decimal.Decimal
	oldest time.Time // zero when nothing counted
}

// measureQuery returns the statement that measures one limit. The tool
// filter is written into the text rather than made optional with an OR, so
// the planner can use the (principal, tool_id, created_at) index.
func (s *Store) measureQuery(l storage.Limit) (string, error) {
	var q string
	switch l.Measure {
	case storage.MeasureSpend:
		q = `SELECT COALESCE(SUM(amount_usd), 0)::text, MIN(created_at) FROM {schema}.spend_ledger
			WHERE principal = $1 AND created_at >= $2 AND state <> 'released'`
	case storage.MeasureCalls:
		q = `SELECT COUNT(*)::text, MIN(created_at) FROM {schema}.spend_ledger
			WHERE principal = $1 AND created_at >= $2`
	default:
		return "", fmt.Errorf("postgres: unknown limit measure %q", l.Measure)
	}
	if l.ToolID != "" {
		q += ` AND tool_id = $3`
	}
	return s.sql(q), nil
}

// measure returns what each limit's window holds for principal, in-flight
// reservations included, in one round trip. Called inside BeginExecution's
// transaction after the principal's lock is held, each statement's snapshot
// includes every admission committed before ours.
func (s *Store) measure(ctx context.Context, db batcher, principal string, limits []storage.Limit) ([]measurement, error) {
	if len(limits) == 0 {
		return nil, nil
	}
	batch := &pgx.Batch{}
	for _, l := range limits {
		q, err := s.measureQuery(l)
		if err != nil {
			return nil, err
		}
		if l.ToolID != "" {
			batch.Queue(q, principal, l.Since, l.ToolID)
		} else {
			batch.Queue(q, principal, l.Since)
		}
	}
	results := db.SendBatch(ctx, batch)
	out := make([]measurement, len(limits))
	for i := range limits {
		var (
			used   string
			oldest *time.Time
		)
		if err := results.QueryRow().Scan(&used, &oldest); err != nil {
			_ = results.Close()
			return nil, translate(err)
		}
		d, err := parseDecimal(used)
		if err != nil {
			_ = results.Close()
			return nil, err
		}
		out[i] = measurement{used: d, oldest: nullTime(oldest)}
	}
	if err := results.Close(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// MeasureLimits returns what each limit's window already holds for the
// principal, in-flight reservations included. It takes no lock: it is a
// preview, and only BeginExecution enforces.
func (s *Store) MeasureLimits(ctx context.Context, principal string, limits []storage.Limit) ([]decimal.Decimal, error) {
	ms, err := s.measure(ctx, s.pool, principal, limits)
	if err != nil {
		return nil, err
	}
	out := make([]decimal.Decimal, len(ms))
	for i, m := range ms {
		out[i] = m.used
	}
	return out, nil
}
