package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// GetIdempotency returns the record for (principal, key) and, once it is
// finished, the response stored on its execution, read with the receipt
// the execution names (see receiptColumn). ErrNotFound if absent.
//
// The record is the key's execution row (migration 0014): its fingerprint
// and lease are columns of it, and it is finished once the execution is no
// longer running, ambiguous included, as FinishExecution leaves it.
func (s *Store) GetIdempotency(ctx context.Context, principal, key string) (storage.IdempotencyRecord, error) {
	return scanIdempotency(s.pool.QueryRow(ctx, s.sql(getIdempotencySQL), principal, key))
}

// getIdempotencySQL reads the record of principal $1's key $2.
const getIdempotencySQL = `
	SELECT principal, idempotency_key, fingerprint, id, lease_token, lease_until,
		status <> 'running', CASE WHEN status <> 'running' THEN response END, ` + receiptColumn + `, created_at
	FROM {schema}.executions
	WHERE principal = $1 AND idempotency_key = $2`

// scanIdempotency scans a row of getIdempotencySQL.
func scanIdempotency(row pgx.Row) (storage.IdempotencyRecord, error) {
	var r storage.IdempotencyRecord
	var signed []byte
	err := row.Scan(&r.Principal, &r.Key, &r.Fingerprint, bytesAt(&r.ExecutionID), bytesAt(&r.LeaseToken), &r.LeaseUntil,
		&r.Finished, &r.Response, &signed, &r.CreatedAt)
	if err != nil {
		return storage.IdempotencyRecord{}, translate(err)
	}
	r.Response = storage.WithReceipt(r.Response, signed)
	r.LeaseUntil, r.CreatedAt = utc(r.LeaseUntil), utc(r.CreatedAt)
	return r, nil
}
