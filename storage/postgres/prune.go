package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// defaultPruneLimit is Prune's per-kind cap when p.Limit is 0.
const defaultPruneLimit = 1000

// Prune deletes what the retention policy no longer needs, at most p.Limit
// rows of each kind. Each kind is one statement in its own transaction, so
// a run holds its row locks only briefly; rows another transaction has
// locked (a finish or a takeover in flight) are skipped, not waited for, and
// left for the next run.
//
// A zero cutoff prunes nothing of that kind.
func (s *Store) Prune(ctx context.Context, p storage.Prune) (storage.PruneResult, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultPruneLimit
	}
	var res storage.PruneResult
	var err error
	if !p.IdempotencyBefore.IsZero() {
		// A running execution is only deleted once its lease ended before
		// the cutoff, so a run with a live lease keeps its key. An
		// ambiguous execution is kept until a person resolves it, however
		// old; the index scan passes over those still unresolved on every
		// run, few as they are. An execution is its key's record
		// (migration 0014), so deleting it frees the key. The first
		// condition, implied by the others, is the one executions_prune_idx
		// answers.
		if res.Idempotency, err = s.pruneCount(ctx, `
			WITH doomed AS (
				SELECT e.id FROM {schema}.executions e
				WHERE LEAST(e.created_at, e.lease_until) < $1
					AND ((e.status <> 'running' AND e.created_at < $1)
						OR (e.status = 'running' AND e.lease_until < $1))
					AND e.status <> 'ambiguous'
				LIMIT $2
				FOR UPDATE SKIP LOCKED
			), gone AS (
				DELETE FROM {schema}.executions e USING doomed d WHERE e.id = d.id
				RETURNING 1
			)
			SELECT count(*) FROM gone`, p.IdempotencyBefore, limit); err != nil {
			return res, err
		}
	}
	if !p.QuotesBefore.IsZero() {
		// A quote whose call is still running is kept: the call may yet
		// be taken over, and it names this quote.
		if res.Quotes, err = s.pruneCount(ctx, `
			WITH gone AS (
				DELETE FROM {schema}.quotes WHERE id IN (
					SELECT q.id FROM {schema}.quotes q
					WHERE q.expires_at < $1
					AND NOT (q.state = 'used' AND EXISTS (
						SELECT 1 FROM {schema}.executions e
						WHERE e.principal = q.principal AND e.idempotency_key = q.used_by_key
							AND e.status = 'running'))
					LIMIT $2 FOR UPDATE SKIP LOCKED)
				RETURNING 1
			)
			SELECT count(*) FROM gone`, p.QuotesBefore, limit); err != nil {
			return res, err
		}
	}
	if !p.ApprovalRequestsBefore.IsZero() {
		// Expired requests go whatever their state: no call can use them
		// any more. One locked by an admission that uses it is skipped.
		if res.ApprovalRequests, err = s.pruneCount(ctx, `
			WITH gone AS (
				DELETE FROM {schema}.approval_requests WHERE id IN (
					SELECT id FROM {schema}.approval_requests WHERE expires_at < $1
					LIMIT $2 FOR UPDATE SKIP LOCKED)
				RETURNING 1
			)
			SELECT count(*) FROM gone`, p.ApprovalRequestsBefore, limit); err != nil {
			return res, err
		}
	}
	if !p.LedgerBefore.IsZero() {
		if res.Ledger, err = s.pruneLedger(ctx, p.LedgerBefore, limit); err != nil {
			return res, err
		}
	}
	return res, nil
}

// pruneLedgerLockClass is the first key of the advisory lock that lets one
// ledger prune at a time run per schema (the second is the schema's hash).
const pruneLedgerLockClass = 0x6c656467 // "ledg"

// pruneLedger deletes old spend and call history. The reservation of a call
// still running, or ambiguous and not resolved, is kept whatever its age:
// its FinishExecution or its resolution must find it to charge or release
// it once. Once an abandoned run's execution is pruned, its reservation
// goes with the rest of the old history.
//
// Each deleted row's trigger takes away its count from its spend_daily and
// spend_minute rows. Two prunes deleting at once would lock those rollup
// rows in no particular order and could deadlock, so ledger prunes take
// turns on an advisory lock held until the deletion commits. Admissions and
// finishes lock the rollup rows of one ledger row, its day's and then its
// minute's, and never wait on a prune's ledger rows, so they cannot close a
// cycle with it: a prune that holds a minute's row took its day's first.
func (s *Store) pruneLedger(ctx context.Context, before time.Time, limit int) (int, error) {
	batch := &pgx.Batch{}
	batch.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, pruneLedgerLockClass, s.schema)
	batch.Queue(s.sql(`
		WITH gone AS (
			DELETE FROM {schema}.spend_ledger WHERE execution_id IN (
				SELECT l.execution_id FROM {schema}.spend_ledger l
				WHERE l.created_at < $1
				AND NOT EXISTS (
					SELECT 1 FROM {schema}.executions e
					WHERE e.id = l.execution_id AND e.status IN ('running', 'ambiguous'))
				LIMIT $2 FOR UPDATE SKIP LOCKED)
			RETURNING 1
		)
		SELECT count(*) FROM gone`), before, limit)
	// One implicit transaction: the lock is held until the batch commits.
	br := s.pool.SendBatch(ctx, batch)
	var n int
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&n)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, translate(err)
	}
	return n, nil
}

func (s *Store) pruneCount(ctx context.Context, query string, before any, limit int) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, s.sql(query), before, limit).Scan(&n); err != nil {
		return 0, translate(err)
	}
	return n, nil
}
