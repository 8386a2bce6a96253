package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// FinishExecution records a running execution's outcome in one transaction:
// the idempotency record finished, the execution's status and response, the
// reservation charged or released, and for completed executions the tool's
// usage counters. ErrLeaseLost when f.LeaseToken no longer holds the lease,
// ErrNotFound when the execution does not exist.
//
// The lease check is the conditional update of the idempotency record: a
// takeover replaces the token under the same row lock, so exactly one of a
// late finish and a takeover wins, on any process.
func (s *Store) FinishExecution(ctx context.Context, f storage.Finish) error {
	if f.Status != storage.ExecutionCompleted && f.Status != storage.ExecutionFailed {
		return fmt.Errorf("postgres: cannot finish an execution as %q", f.Status)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return translate(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	if err := s.finish(ctx, tx, f); err != nil {
		return err
	}
	return translate(tx.Commit(ctx))
}

func (s *Store) finish(ctx context.Context, tx pgx.Tx, f storage.Finish) error {
	tag, err := tx.Exec(ctx, s.sql(`
		UPDATE {schema}.idempotency_records SET finished = true
		WHERE principal = $1 AND key = $2 AND execution_id = $3 AND lease_token = $4 AND NOT finished`),
		f.Principal, f.Key, f.ExecutionID, f.LeaseToken)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		// No such execution of this principal under this key: not found.
		// Otherwise the lease was taken over or the run already finished;
		// either way this run's result is not the one on record.
		var exists bool
		if err := tx.QueryRow(ctx, s.sql(`
			SELECT EXISTS (SELECT 1 FROM {schema}.executions e
				JOIN {schema}.idempotency_records i ON i.execution_id = e.id
				WHERE e.id = $1 AND e.principal = $2 AND i.principal = $2 AND i.key = $3)`),
			f.ExecutionID, f.Principal, f.Key).Scan(&exists); err != nil {
			return translate(err)
		}
		if !exists {
			return storage.ErrNotFound
		}
		return storage.ErrLeaseLost
	}

	response := f.Response
	if response == nil {
		// A finished execution always has a response, even an empty one;
		// NULL is kept to mean "still running".
		response = []byte{}
	}
	var toolID, principal string
	err = tx.QueryRow(ctx, s.sql(`
		UPDATE {schema}.executions SET status = $2, charged = $3, response = $4, finished_at = $5
		WHERE id = $1 AND status = 'running'
		RETURNING tool_id, principal`),
		f.ExecutionID, string(f.Status), f.Charged, response, f.Now).Scan(&toolID, &principal)
	if errors.Is(err, pgx.ErrNoRows) {
		// The record still held the lease but its execution is gone or
		// already finished: nothing consistent to write.
		return storage.ErrNotFound
	}
	if err != nil {
		return translate(err)
	}

	// Prune keeps the reservations of running executions, so the row is
	// there; the state condition makes a repeated update harmless.
	state := "released"
	if f.Charged {
		state = "charged"
	}
	if _, err := tx.Exec(ctx, s.sql(`
		UPDATE {schema}.spend_ledger SET state = $2 WHERE execution_id = $1 AND state = 'reserved'`),
		f.ExecutionID, state); err != nil {
		return translate(err)
	}

	if f.Status != storage.ExecutionCompleted {
		return nil
	}
	// One statement: the (tool, principal) insert reports whether this
	// principal is new to the tool, and the counter row counts it. Its
	// ON CONFLICT waits for a concurrent insert of the same pair to commit,
	// so a principal is counted once however many finishes race.
	if _, err := tx.Exec(ctx, s.sql(`
		WITH new_user AS (
			INSERT INTO {schema}.tool_users (tool_id, principal) VALUES ($1, $2)
			ON CONFLICT (tool_id, principal) DO NOTHING
			RETURNING 1
		)
		INSERT INTO {schema}.tool_usage AS u (tool_id, count, unique_users)
		VALUES ($1, 1, (SELECT count(*) FROM new_user))
		ON CONFLICT (tool_id) DO UPDATE
		SET count = u.count + 1, unique_users = u.unique_users + EXCLUDED.unique_users`),
		toolID, principal); err != nil {
		return translate(err)
	}
	return nil
}
