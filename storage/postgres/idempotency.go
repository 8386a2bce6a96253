package postgres

import (
	"context"

	"github.com/toolgate/toolgate/storage"
)

// GetIdempotency returns the record for (principal, key) and, once it is
// finished, the response stored on its execution. ErrNotFound if absent.
func (s *Store) GetIdempotency(ctx context.Context, principal, key string) (storage.IdempotencyRecord, error) {
	var r storage.IdempotencyRecord
	// The response is kept once, on the execution; both rows are written in
	// FinishExecution's transaction and pruned in one statement.
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT i.principal, i.key, i.fingerprint, i.execution_id, i.lease_token, i.lease_until,
			i.finished, CASE WHEN i.finished THEN e.response END, i.created_at
		FROM {schema}.idempotency_records i
		LEFT JOIN {schema}.executions e ON e.id = i.execution_id
		WHERE i.principal = $1 AND i.key = $2`), principal, key).Scan(
		&r.Principal, &r.Key, &r.Fingerprint, bytesAt(&r.ExecutionID), bytesAt(&r.LeaseToken), &r.LeaseUntil,
		&r.Finished, &r.Response, &r.CreatedAt)
	if err != nil {
		return storage.IdempotencyRecord{}, translate(err)
	}
	r.LeaseUntil, r.CreatedAt = utc(r.LeaseUntil), utc(r.CreatedAt)
	return r, nil
}
