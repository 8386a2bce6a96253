package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// resolveSQL resolves an ambiguous execution in one statement, so in one
// implicit transaction and one round trip:
//
//   - resolved: the execution's status, charged flag, response (kept once,
//     on the execution, which a replay of its key reads) and resolution,
//     only while it is ambiguous. A concurrent resolution waits for this
//     one's row lock and then finds the row no longer ambiguous, so exactly
//     one of them writes, on any process.
//   - released_day, released_minute: the reservation is the execution's
//     (see reservation.go), so a charge writes nothing more; a release
//     ($8) takes the amount out of the execution's day and minute rollups.
//     It reads the execution as it was before resolved changed it, which
//     is as good: a resolution changes neither what it reads (principal,
//     tool, time, amount) nor whether it counts, and Prune keeps an
//     unresolved execution counting.
//   - new_user, usage: for completed, the tool's usage counters, as
//     finishSQL counts them.
//
// It returns the execution as resolved, or no row when nothing was written;
// resolveFailure says why.
//
// $1 execution id, $2 outcome, $3 charged, $4 response, $5 resolved by,
// $6 resolved at, $7 note, $8 whether the outcome releases the reservation,
// $9 usage shard.
//
// resolveSealedSQL is the same statement storing the resolution's receipt,
// run under the chain's lock (see receipt.go), after every other row the
// statement writes, as finishSealedSQL does. $10 principal (the one the
// receipt was sealed for), $11 seq, $12 hash, $13 signed receipt, which
// the execution names; $4, the response, is stored without it.
var (
	resolveSQL       = resolveStatement(false)
	resolveSealedSQL = resolveStatement(true)
)

// resolveStatement returns the resolution statement, with or without a
// receipt.
//
// Both settle the execution's amount on its budgets too (budgetSettleSQL),
// after the principal's rollups and the usage counters: resolutions are
// rare, and one statement serves an execution in budgets or in none.
func resolveStatement(sealed bool) string {
	// A resolution names its own receipt in place of the finish's, or,
	// without one, none: the finish's is not the resolved response's.
	principalCheck, receipt, receiptSeq := "", "", "NULL"
	if sealed {
		principalCheck = ` AND principal = $10`
		receiptSeq = "$11::bigint"
		receipt = `,
receipt AS (
	INSERT INTO {schema}.receipts (principal, seq, execution_id, hash, signed)
	SELECT $10, $11::bigint, $1::uuid, $12::text, $13::bytea FROM resolved
	WHERE (SELECT count(*) FROM released_minute) + (SELECT count(*) FROM usage) >= 0
		AND ` + budgetSettledSQL + `
)`
	}
	return `
WITH resolved AS (
	UPDATE {schema}.executions SET status = $2, charged = $3, response = $4, receipt_seq = ` + receiptSeq + `,
		resolution_outcome = $2, resolved_by = $5, resolved_at = $6, resolution_note = $7
	WHERE id = $1 AND status = 'ambiguous'` + principalCheck + `
	RETURNING ` + returnedColumns + `
),` + releaseRollups(`(SELECT e.principal, e.tool_id, e.created_at, e.amount_usd, e.counted
		FROM {schema}.executions e WHERE e.id = $1 AND EXISTS (SELECT FROM resolved))`, "$8::boolean") + `,
new_user AS (
	INSERT INTO {schema}.tool_users (tool_id, principal)
	SELECT tool_id, principal FROM resolved WHERE $3
	ON CONFLICT (tool_id, principal) DO NOTHING
	RETURNING 1
),
usage AS (
	INSERT INTO {schema}.tool_usage_shards AS u (tool_id, shard, count, unique_users)
	SELECT tool_id, $9::smallint, 1, (SELECT count(*) FROM new_user) FROM resolved WHERE $3
	ON CONFLICT (tool_id, shard) DO UPDATE
	SET count = u.count + 1, unique_users = u.unique_users + EXCLUDED.unique_users
	RETURNING 1
)` + budgetSettleSQL(`(SELECT e.principal, e.tool_id, e.tool_slug, e.amount_usd, e.budgets, e.budget_days
		FROM {schema}.executions e WHERE e.id = $1 AND EXISTS (SELECT FROM resolved))`, "$8::boolean", "$3::boolean",
		`(SELECT count(*) FROM released_minute) + (SELECT count(*) FROM usage) >= 0`) + receipt + `
SELECT * FROM resolved`
}

// ResolveExecution records a person's finding about an ambiguous execution
// atomically: its status and resolution, the resolved response, the
// reservation charged or released, and for completed the tool's usage
// counters. ErrNotFound, ErrAlreadyResolved or ErrNotAmbiguous otherwise.
// The commit waits for the disk, as a finish's does.
//
// With r.Seal, the resolution's receipt is stored by the same statement,
// on the chain of the execution's principal, and the execution names it
// (the response is stored without it). Resolutions are rare (a person makes each), so this one
// takes the plain way: it reads the execution's principal, then resolves
// in a transaction that holds the chain's lock (see lockedWrite).
//
// A resolution as completed weighs r.Alerts after it, in its transaction
// and its round trip (see outboxWrites).
func (s *Store) ResolveExecution(ctx context.Context, r storage.Resolve) (storage.Execution, error) {
	if err := r.Check(); err != nil {
		return storage.Execution{}, err
	}
	if err := checkEvents(nil, r.Alerts); err != nil {
		return storage.Execution{}, err
	}
	charged := r.Outcome == storage.ExecutionCompleted
	var alerts outboxWrites
	alerts.add(r.ExecutionID, uuid.Nil, nil, r.Alerts, charged)
	if r.Seal != nil {
		return s.resolveSealed(ctx, r, charged, &alerts)
	}
	response := storedResponse(r.Response)
	var e storage.Execution
	answer, err := s.sendWithOutbox(ctx, s.pool, s.sql(resolveSQL), []any{
		bytesOf(r.ExecutionID), string(r.Outcome), charged, response, r.ResolvedBy, r.Now, r.Note,
		!charged, usageShard(r.ExecutionID),
	}, &alerts, func(row pgx.Row) (err error) { e, err = scanExecution(row); return err })
	switch {
	case err != nil:
		return storage.Execution{}, translate(err)
	case errors.Is(answer, storage.ErrNotFound):
		return storage.Execution{}, s.resolveFailure(ctx, r)
	case answer != nil:
		return storage.Execution{}, answer
	}
	return e, nil
}

// resolveSealed is ResolveExecution with a receipt: resolveSealedSQL, run
// by writeSealed under the chain's lock.
func (s *Store) resolveSealed(ctx context.Context, r storage.Resolve, charged bool, alerts *outboxWrites) (storage.Execution, error) {
	// An execution's principal never changes; the statement checks it all
	// the same.
	var principal string
	if err := s.pool.QueryRow(ctx, s.sql(`SELECT principal FROM {schema}.executions WHERE id = $1`),
		bytesOf(r.ExecutionID)).Scan(&principal); err != nil {
		return storage.Execution{}, translate(err) // no rows: ErrNotFound
	}
	var e storage.Execution
	wrote, err := s.writeSealed(ctx, principal, r.Seal, false,
		func(ctx context.Context, q querier, _ bool, seq int64, _ string, sealed storage.Sealed) (bool, error) {
			hash, signed := receiptArgs(sealed)
			answer, err := s.sendWithOutbox(ctx, q, s.sql(resolveSealedSQL), []any{
				bytesOf(r.ExecutionID), string(r.Outcome), charged, storedResponse(r.Response), r.ResolvedBy, r.Now, r.Note,
				!charged, usageShard(r.ExecutionID), principal, seq, hash, signed,
			}, alerts, func(row pgx.Row) (err error) { e, err = scanExecution(row); return err })
			if err != nil {
				return false, translate(err)
			}
			err = answer
			// The statement's RETURNING cannot see the receipt it inserts.
			e.Response = storage.WithReceipt(e.Response, sealed.Receipt)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				return false, nil
			case receiptConflict(err):
				return false, errChainMoved
			}
			return err == nil, err
		})
	if err != nil {
		return storage.Execution{}, err
	}
	if !wrote {
		return storage.Execution{}, s.resolveFailure(ctx, r)
	}
	return e, nil
}

// resolveFailure says why resolveSQL wrote nothing, which costs a second
// round trip: no such execution, one resolved before (by a concurrent
// resolution, perhaps, which this one waited for), or one that was never
// ambiguous.
func (s *Store) resolveFailure(ctx context.Context, r storage.Resolve) error {
	var resolved bool
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT resolution_outcome IS NOT NULL FROM {schema}.executions WHERE id = $1`),
		bytesOf(r.ExecutionID)).Scan(&resolved)
	switch {
	case err != nil:
		return translate(err) // no rows: ErrNotFound
	case resolved:
		return storage.ErrAlreadyResolved
	}
	// Ambiguous now but not when resolveSQL ran, it was still running then
	// and has only just finished: not ambiguous at the resolution's moment.
	return storage.ErrNotAmbiguous
}
