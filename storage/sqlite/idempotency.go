package sqlite

import (
	"context"

	"github.com/toolgate/toolgate/storage"
)

// GetIdempotency returns the record for (principal, key) and, once it is
// finished, the response stored on its execution. ErrNotFound if absent.
//
// The record is the execution's own row (0008_one_row_per_call.sql): its
// key, fingerprint and lease, finished once the execution no longer runs,
// and created when the execution was.
func (s *Store) GetIdempotency(ctx context.Context, principal, key string) (storage.IdempotencyRecord, error) {
	var (
		r              storage.IdempotencyRecord
		execID, token  []byte
		signed         []byte
		leaseUntil, at int64
		status         string
	)
	err := translate(s.pool(ctx).queryRow(`
		SELECT principal, idempotency_key, fingerprint, id, lease_token, lease_until,
			status, iif(status <> 'running', response, NULL), `+receiptColumn+`, created_at
		FROM executions WHERE principal = ? AND idempotency_key = ?`, principal, key).Scan(
		&r.Principal, &r.Key, &r.Fingerprint, &execID, &token, &leaseUntil, &status, &r.Response, &signed, &at))
	if err != nil {
		return storage.IdempotencyRecord{}, err
	}
	if r.ExecutionID, err = parseID(execID); err != nil {
		return storage.IdempotencyRecord{}, err
	}
	if r.LeaseToken, err = parseID(token); err != nil {
		return storage.IdempotencyRecord{}, err
	}
	r.Finished = status != string(storage.ExecutionRunning)
	r.Response = storage.WithReceipt(r.Response, signed)
	r.LeaseUntil, r.CreatedAt = fromNanos(leaseUntil), fromNanos(at)
	return r, nil
}
