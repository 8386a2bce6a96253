package sqlite

import (
	"context"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// executionColumns is the select list scanExecution reads.
const executionColumns = `id, principal, tool_id, quote_id, idempotency_key, status,
	amount, charged, response, created_at, finished_at`

func scanExecution(row scanner) (storage.Execution, error) {
	var (
		e               storage.Execution
		id, quoteID     []byte
		status          string
		amount, created int64
		finished        *int64
	)
	if err := row.Scan(&id, &e.Principal, &e.ToolID, &quoteID, &e.IdempotencyKey, &status,
		&amount, &e.Charged, &e.Response, &created, &finished); err != nil {
		return storage.Execution{}, translate(err)
	}
	var err error
	if e.ID, err = parseID(id); err != nil {
		return storage.Execution{}, err
	}
	if e.QuoteID, err = parseID(quoteID); err != nil {
		return storage.Execution{}, err
	}
	e.Status = storage.ExecutionStatus(status)
	e.AmountUSD = fromUnits(amount)
	e.CreatedAt = fromNanos(created)
	e.FinishedAt = nullNanos(finished)
	return e, nil
}

// GetExecution returns an execution by id. ErrNotFound if absent.
func (s *Store) GetExecution(ctx context.Context, id uuid.UUID) (storage.Execution, error) {
	return getExecution(s.pool(ctx), id)
}

// getExecution reads an execution by id. ErrNotFound if absent.
func getExecution(q reader, id uuid.UUID) (storage.Execution, error) {
	return scanExecution(q.queryRow(`SELECT `+executionColumns+` FROM executions WHERE id = ?`, idBytes(id)))
}
