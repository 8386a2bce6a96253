package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// BeginExecution admits a call in one transaction: it claims or takes over
// (principal, key), marks the quote used, and for a new claim checks
// b.Limits and reserves the amount. Any error rolls the whole transaction
// back, so nothing is written.
//
// Competing admissions of one principal are serialized by a row lock on the
// principal's principal_locks row, taken first. With that lock held, each
// later statement's snapshot (READ COMMITTED) includes every admission the
// previous holders committed, so limits are measured and the reservation
// written with no other admission of that principal in between, on any
// process. Other principals are not held up.
func (s *Store) BeginExecution(ctx context.Context, b storage.Begin) (storage.BeginResult, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return storage.BeginResult{}, translate(err)
	}
	// A no-op after Commit; on every error path it discards all writes.
	defer func() { _ = tx.Rollback(ctx) }()

	res, err := s.begin(ctx, tx, b)
	if err != nil {
		return storage.BeginResult{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return storage.BeginResult{}, translate(err)
	}
	return res, nil
}

func (s *Store) begin(ctx context.Context, tx pgx.Tx, b storage.Begin) (storage.BeginResult, error) {
	if err := s.lockPrincipal(ctx, tx, b.Principal); err != nil {
		return storage.BeginResult{}, err
	}

	// The key comes first so that a retry of a finished or running call is
	// answered from its record, whatever became of its quote.
	claimed, err := s.claimKey(ctx, tx, b)
	if err != nil {
		return storage.BeginResult{}, err
	}
	if !claimed {
		if err := s.takeOverLease(ctx, tx, b); err != nil {
			return storage.BeginResult{}, err
		}
	}
	if err := s.useQuote(ctx, tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	if !claimed {
		// The original execution and its reservation are kept as they
		// are: its amount is already counted, so limits are not measured
		// again and nothing is reserved twice.
		exec, err := scanExecution(tx.QueryRow(ctx, s.sql(`
			SELECT `+executionColumns+` FROM {schema}.executions
			WHERE id = (SELECT execution_id FROM {schema}.idempotency_records WHERE principal = $1 AND key = $2)`),
			b.Principal, b.Key))
		if err != nil {
			return storage.BeginResult{}, err
		}
		return storage.BeginResult{Execution: exec, TookOver: true}, nil
	}

	// Inserted before the limits are measured (they read only the ledger)
	// so that a colliding execution id is reported as ErrAlreadyExists
	// whatever the limits say.
	exec, err := scanExecution(tx.QueryRow(ctx, s.sql(`
		INSERT INTO {schema}.executions (id, principal, tool_id, quote_id, idempotency_key, status,
			amount_usd, charged, created_at)
		VALUES ($1, $2, $3, $4, $5, 'running', $6::numeric, false, $7)
		RETURNING `+executionColumns),
		b.ExecutionID, b.Principal, b.ToolID, b.QuoteID, b.Key, b.AmountUSD.String(), b.Now))
	if err != nil {
		return storage.BeginResult{}, err
	}
	if err := s.checkLimits(ctx, tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	if _, err := tx.Exec(ctx, s.sql(`
		INSERT INTO {schema}.spend_ledger (execution_id, principal, tool_id, amount_usd, state, created_at)
		VALUES ($1, $2, $3, $4::numeric, 'reserved', $5)`),
		b.ExecutionID, b.Principal, b.ToolID, b.AmountUSD.String(), b.Now); err != nil {
		return storage.BeginResult{}, translate(err)
	}
	return storage.BeginResult{Execution: exec}, nil
}

// lockPrincipal takes the principal's admission lock until the transaction
// ends, creating its row on first use. ON CONFLICT DO NOTHING waits for a
// concurrent creator to commit, then the SELECT ... FOR UPDATE queues behind
// whoever holds the row.
func (s *Store) lockPrincipal(ctx context.Context, tx pgx.Tx, principal string) error {
	if _, err := tx.Exec(ctx, s.sql(`
		INSERT INTO {schema}.principal_locks (principal) VALUES ($1) ON CONFLICT (principal) DO NOTHING`),
		principal); err != nil {
		return translate(err)
	}
	if _, err := tx.Exec(ctx, s.sql(`
		SELECT 1 FROM {schema}.principal_locks WHERE principal = $1 FOR UPDATE`), principal); err != nil {
		return translate(err)
	}
	return nil
}

// claimKey inserts the idempotency record and reports whether it was new.
// The primary key (principal, key) is what guarantees a single claim.
func (s *Store) claimKey(ctx context.Context, tx pgx.Tx, b storage.Begin) (bool, error) {
	tag, err := tx.Exec(ctx, s.sql(`
		INSERT INTO {schema}.idempotency_records
			(principal, key, fingerprint, execution_id, lease_token, lease_until, finished, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, false, $7)
		ON CONFLICT (principal, key) DO NOTHING`),
		b.Principal, b.Key, b.Fingerprint, b.ExecutionID, b.LeaseToken, b.LeaseUntil, b.Now)
	if err != nil {
		return false, translate(err)
	}
	return tag.RowsAffected() == 1, nil
}

// takeOverLease moves the lease of an abandoned run to this one: same
// fingerprint, not finished, lease ended before b.Now (the caller's clock,
// not the database's, so every process judges leases by the same rule).
// Any other existing record is ErrIdempotencyConflict. Replacing the token
// is what makes the abandoned run's FinishExecution fail with ErrLeaseLost.
func (s *Store) takeOverLease(ctx context.Context, tx pgx.Tx, b storage.Begin) error {
	tag, err := tx.Exec(ctx, s.sql(`
		UPDATE {schema}.idempotency_records SET lease_token = $3, lease_until = $4
		WHERE principal = $1 AND key = $2 AND NOT finished AND fingerprint = $5 AND lease_until < $6`),
		b.Principal, b.Key, b.LeaseToken, b.LeaseUntil, b.Fingerprint, b.Now)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrIdempotencyConflict
	}
	return nil
}

// useQuote marks the quote used by this key in one conditional update; a
// quote this key already used (a takeover, or a retry of a key whose record
// was pruned) is the same logical call, not a reuse.
func (s *Store) useQuote(ctx context.Context, tx pgx.Tx, b storage.Begin) error {
	tag, err := tx.Exec(ctx, s.sql(`
		UPDATE {schema}.quotes SET state = 'used', used_by_key = $3
		WHERE id = $1 AND principal = $2 AND (state = 'open' OR used_by_key = $3)`),
		b.QuoteID, b.Principal, b.Key)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var exists bool
	if err := tx.QueryRow(ctx, s.sql(`
		SELECT EXISTS (SELECT 1 FROM {schema}.quotes WHERE id = $1 AND principal = $2)`),
		b.QuoteID, b.Principal).Scan(&exists); err != nil {
		return translate(err)
	}
	if !exists {
		return storage.ErrQuoteNotFound
	}
	return storage.ErrQuoteUsed
}

// checkLimits fails with *storage.LimitError listing every limit this call
// would break.
func (s *Store) checkLimits(ctx context.Context, tx pgx.Tx, b storage.Begin) error {
	ms, err := s.measure(ctx, tx, b.Principal, b.Limits)
	if err != nil {
		return err
	}
	var failures []storage.LimitFailure
	for i, l := range b.Limits {
		add := decimal.NewFromInt(1)
		if l.Measure == storage.MeasureSpend {
			add = b.AmountUSD
		}
		if ms[i].used.Add(add).GreaterThan(l.Max) {
			failures = append(failures, storage.LimitFailure{Index: i, Limit: l, Used: ms[i].used, Oldest: ms[i].oldest})
		}
	}
	if len(failures) > 0 {
		return &storage.LimitError{Failures: failures}
	}
	return nil
}
