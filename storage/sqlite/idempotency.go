package sqlite

import (
	"context"

	"github.com/toolgate/toolgate/storage"
)

// GetIdempotency returns the record for (principal, key) and, once it is
// finished, the response stored on its execution. ErrNotFound if absent.
func (s *Store) GetIdempotency(ctx context.Context, principal, key string) (storage.IdempotencyRecord, error) {
	var (
		r              storage.IdempotencyRecord
		execID, token  []byte
		leaseUntil, at int64
		finished       bool
	)
	// The response is kept once, on the execution; both rows are written
	// by FinishExecution's transaction and pruned by one Prune step.
	err := translate(s.pool(ctx).queryRow(`
		SELECT i.principal, i.key, i.fingerprint, i.execution_id, i.lease_token, i.lease_until,
			i.finished, iif(i.finished, e.response, NULL), i.created_at
		FROM idempotency_records i
		LEFT JOIN executions e ON e.id = i.execution_id
		WHERE i.principal = ? AND i.key = ?`, principal, key).Scan(
		&r.Principal, &r.Key, &r.Fingerprint, &execID, &token, &leaseUntil, &finished, &r.Response, &at))
	if err != nil {
		return storage.IdempotencyRecord{}, err
	}
	if r.ExecutionID, err = parseID(execID); err != nil {
		return storage.IdempotencyRecord{}, err
	}
	if r.LeaseToken, err = parseID(token); err != nil {
		return storage.IdempotencyRecord{}, err
	}
	r.Finished = finished
	r.LeaseUntil, r.CreatedAt = fromNanos(leaseUntil), fromNanos(at)
	return r, nil
}
