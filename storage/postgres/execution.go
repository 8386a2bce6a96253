package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// executionColumns is the select list scanExecution reads.
const executionColumns = `id, principal, tool_id, quote_id, idempotency_key, status,
	amount_usd::text, charged, response, created_at, finished_at`

func scanExecution(row pgx.Row) (storage.Execution, error) {
	var (
		e        storage.Execution
		status   string
		amount   string
		finished *time.Time
	)
	if err := row.Scan(bytesAt(&e.ID), &e.Principal, &e.ToolID, bytesAt(&e.QuoteID), &e.IdempotencyKey, &status,
		&amount, &e.Charged, &e.Response, &e.CreatedAt, &finished); err != nil {
		return storage.Execution{}, translate(err)
	}
	d, err := parseDecimal(amount)
	if err != nil {
		return storage.Execution{}, err
	}
	e.Status = storage.ExecutionStatus(status)
	e.AmountUSD = d
	e.CreatedAt = utc(e.CreatedAt)
	e.FinishedAt = nullTime(finished)
	return e, nil
}

// GetExecution returns an execution by id. ErrNotFound if absent.
func (s *Store) GetExecution(ctx context.Context, id uuid.UUID) (storage.Execution, error) {
	return scanExecution(s.pool.QueryRow(ctx, s.sql(`SELECT `+executionColumns+` FROM {schema}.executions WHERE id = $1`), bytesOf(id)))
}
