package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// Prune deletes what the retention policy no longer needs, at most p.Limit
// rows of each kind. Each kind is one statement in its own transaction, so
// a run holds its row locks only briefly; rows another transaction has
// locked (a finish or a takeover in flight) are skipped, not waited for, and
// left for the next run.
//
// A zero cutoff prunes nothing of that kind.
func (s *Store) Prune(ctx context.Context, p storage.Prune) (storage.PruneResult, error) {
	limit := p.Limit
	var res storage.PruneResult
	var err error
	if !p.IdempotencyBefore.IsZero() {
		if res.Idempotency, err = s.pruneExecutions(ctx, p.IdempotencyBefore, limit); err != nil {
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
	if !p.EventsBefore.IsZero() {
		// Delivered events only: pending and failed ones, and the counts
		// of EventStats, are kept.
		if res.Events, err = s.pruneCount(ctx, pruneEventsSQL, p.EventsBefore, limit); err != nil {
			return res, err
		}
	}
	if !p.LedgerBefore.IsZero() {
		if res.Ledger, err = s.pruneLedger(ctx, p.LedgerBefore, limit); err != nil {
			return res, err
		}
		if _, err = s.pruneBudgetHistory(ctx, p.LedgerBefore, limit); err != nil {
			return res, err
		}
	}
	return res, nil
}

// pruneBudgetHistorySQL deletes the budgets' history from before $1, a
// day: at most $3 day rows (budget_daily), as many spend rows
// (budget_spend), and as many minute rows (budget_minute, UTC minutes) and
// alert claims from before $2 (alerts_sent, which only instances of a
// version before the outbox, migration 0020, still write). A budget's day
// is its own time zone's, which may start up to a day before the UTC day
// of the same date, so the caller keeps one day more than the ledger's
// cutoff: no day a limit of the ledger's span could count goes. Rows a
// writer holds are skipped, never waited for, and left for the next run,
// so the prune closes no cycle with the writers' locks (see budget.go);
// only a writer settling a call from before the cutoff (a resolution,
// months late) finds its day row gone, and leaves it so.
const pruneBudgetHistorySQL = `
	WITH daily AS (
		DELETE FROM {schema}.budget_daily d WHERE (d.budget, d.day, d.tool_id) IN (
			SELECT budget, day, tool_id FROM {schema}.budget_daily WHERE day < $1::date
			LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING 1
	), spend AS (
		DELETE FROM {schema}.budget_spend s WHERE (s.budget, s.day, s.principal, s.tool) IN (
			SELECT budget, day, principal, tool FROM {schema}.budget_spend WHERE day < $1::date
			LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING 1
	), minutes AS (
		DELETE FROM {schema}.budget_minute m WHERE (m.budget, m.minute, m.tool_id) IN (
			SELECT budget, minute, tool_id FROM {schema}.budget_minute WHERE minute < $2
			LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING 1
	), alerts AS (
		DELETE FROM {schema}.alerts_sent WHERE id IN (
			SELECT id FROM {schema}.alerts_sent WHERE claimed_at < $2
			LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING 1
	)
	SELECT (SELECT count(*) FROM daily) + (SELECT count(*) FROM spend) + (SELECT count(*) FROM minutes)
		+ (SELECT count(*) FROM alerts)`

// pruneBudgetHistory runs pruneBudgetHistorySQL for the ledger's cutoff
// before: the budgets' days before the day before its UTC date go.
func (s *Store) pruneBudgetHistory(ctx context.Context, before time.Time, limit int) (int, error) {
	day := before.UTC().Truncate(24*time.Hour).AddDate(0, 0, -1).Format(time.DateOnly)
	var n int
	if err := s.pool.QueryRow(ctx, s.sql(pruneBudgetHistorySQL), day, before, limit).Scan(&n); err != nil {
		return 0, translate(err)
	}
	return n, nil
}

// pruneExecutionsSQL deletes executions whose keys retention no longer
// needs, and keeps what the limits still count of them in the archive.
//
// A running execution is only deleted once its lease ended before the
// cutoff, so a run with a live lease keeps its key. An ambiguous execution
// is kept until a person resolves it, however old; the index scan passes
// over those still unresolved on every run, few as they are. An execution
// is its key's record (migration 0014), so deleting it frees the key. The
// first condition, implied by the others, is the one executions_prune_idx
// answers.
//
// Each deleted execution that still counts in the rollups (counted, see
// reservation.go) leaves a spend_ledger row with its reservation's state,
// in the same statement, so that limits read it as before. An abandoned
// run's is archived 'reserved', as its ledger row was kept before
// migration 0015: nothing will settle it. The rollups count these calls
// already: the transaction sets toolgate.admission_rollups to 'inline',
// which the ledger's insert trigger honours (migration 0010), so it does
// not count them again, and toolgate.ledger_archive to 'on', without which
// the ledger and executions refuse the writes of an earlier version
// (migration 0015).
const pruneExecutionsSQL = `
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
		RETURNING e.id, e.principal, e.tool_id, e.amount_usd, e.created_at, e.counted,
			` + executionReservationStateSQL + ` AS state
	), archived AS (
		INSERT INTO {schema}.spend_ledger (execution_id, principal, tool_id, amount_usd, state, created_at)
		SELECT id, principal, tool_id, amount_usd, state, created_at FROM gone WHERE counted
	)
	SELECT count(*) FROM gone`

// archiveSettingsSQL lets the transaction it runs in write the archive
// (see pruneExecutionsSQL).
const archiveSettingsSQL = `SELECT set_config('toolgate.ledger_archive', 'on', true),
	set_config('toolgate.admission_rollups', 'inline', true)`

// pruneExecutions runs pruneExecutionsSQL after archiveSettingsSQL, in
// one implicit transaction, so the settings end with it.
func (s *Store) pruneExecutions(ctx context.Context, before time.Time, limit int) (int, error) {
	batch := &pgx.Batch{}
	batch.Queue(archiveSettingsSQL)
	batch.Queue(s.sql(pruneExecutionsSQL), before, limit)
	return s.batchCount(ctx, batch)
}

// pruneLedgerLockClass is the first key of the advisory lock that lets one
// ledger prune at a time run per schema (the second is the schema's hash).
const pruneLedgerLockClass = 0x6c656467 // "ledg"

// pruneLedgerSQL takes old spend and call history out of what limits
// count, at most $2 calls created before $1, in one statement:
//
//   - archive, gone: rows of the archive (calls whose executions were
//     pruned) are deleted; each row's trigger takes its call out of its
//     day's and minute's rollups. Only archived calls are in the ledger
//     since migration 0015, none of them running, so none is kept.
//   - settled, uncounted: executions not yet pruned whose calls are
//     settled (neither running nor ambiguous: their finish or resolution
//     must still find them counted, to release the amount once) stop
//     counting, up to what the archive left of $2. The execution stays,
//     with its key, for its own retention.
//   - day_rows, day_updated, day_emptied, then the same for minutes: the
//     uncounted calls are taken out of their rollups as the trigger takes
//     an archived row out, one call and its spend unless released, and a
//     row left with no call is deleted. Calls are summed per rollup row
//     first, since an update changes a row once per statement; the rows
//     are locked first (FOR UPDATE, which reads their newest version), so
//     that whether a row is emptied is decided on what it holds.
//
// Every day's row is locked before any minute's row (the minutes wait for
// the days' counts), and the archive's triggers run after both, each
// locking its day's row and then its minute's, so this prune holds a
// minute's row only once it holds the row of its day.
//
// The executions' condition is read through executions_prune_idx, whose
// LEAST(created_at, lease_until) any execution created before $1 has
// before $1 too. Executions that stopped counting stay in that range until
// they are pruned, which retention usually does long before (a day's keys,
// a month's spend).
var pruneLedgerSQL = `
	WITH archive AS MATERIALIZED (
		SELECT l.execution_id FROM {schema}.spend_ledger l
		WHERE l.created_at < $1
		LIMIT $2 FOR UPDATE SKIP LOCKED
	), gone AS (
		DELETE FROM {schema}.spend_ledger l USING archive a WHERE l.execution_id = a.execution_id
		RETURNING 1
	), settled AS MATERIALIZED (
		SELECT e.id FROM {schema}.executions e
		WHERE LEAST(e.created_at, e.lease_until) < $1 AND e.created_at < $1
			AND e.counted AND e.status NOT IN ('running', 'ambiguous')
		LIMIT $2 - (SELECT count(*) FROM archive)
		FOR UPDATE SKIP LOCKED
	), uncounted AS (
		UPDATE {schema}.executions e SET counted = false FROM settled s WHERE e.id = s.id
		RETURNING e.principal, e.tool_id, e.created_at,
			CASE WHEN ` + executionHoldsSpendSQL + ` THEN e.amount_usd ELSE 0 END AS spend
	),` + uncountFromRollup("day", "spend_daily", `(created_at AT TIME ZONE 'UTC')::date`, "") + `,` +
	uncountFromRollup("minute", "spend_minute", `date_trunc('minute', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`,
		`(SELECT count(*) FROM day_updated) + (SELECT count(*) FROM day_emptied) >= 0`) + `
	SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM uncounted)`

// uncountFromRollup returns the WITH items of pruneLedgerSQL that take
// the uncounted calls out of one rollup, table, whose rows are keyed by
// principal, tool and the bucket (name) that bucketOf computes from
// created_at: name_calls sums the calls per row, name_rows locks the rows
// they fall in, name_updated takes them out of rows that keep a call, and
// name_emptied deletes the rows left with none. after, unless empty, is a
// condition that makes these items wait for an earlier rollup's writes.
func uncountFromRollup(name, table, bucketOf, after string) string {
	where := ""
	if after != "" {
		where = `
		WHERE ` + after
	}
	return `
	` + name + `_calls AS (
		SELECT principal, ` + bucketOf + ` AS ` + name + `, tool_id, count(*) AS calls, sum(spend) AS spend
		FROM uncounted` + where + `
		GROUP BY 1, 2, 3
	), ` + name + `_rows AS MATERIALIZED (
		SELECT t.principal, t.` + name + `, t.tool_id, t.calls - c.calls AS calls_left, c.calls, c.spend
		FROM {schema}.` + table + ` t JOIN ` + name + `_calls c USING (principal, ` + name + `, tool_id)
		FOR UPDATE OF t
	), ` + name + `_updated AS (
		UPDATE {schema}.` + table + ` t SET calls = t.calls - r.calls, spend_usd = t.spend_usd - r.spend
		FROM ` + name + `_rows r
		WHERE t.principal = r.principal AND t.` + name + ` = r.` + name + ` AND t.tool_id = r.tool_id AND r.calls_left > 0
		RETURNING 1
	), ` + name + `_emptied AS (
		DELETE FROM {schema}.` + table + ` t USING ` + name + `_rows r
		WHERE t.principal = r.principal AND t.` + name + ` = r.` + name + ` AND t.tool_id = r.tool_id AND r.calls_left <= 0
		RETURNING 1
	)`
}

// pruneLedger runs pruneLedgerSQL. PruneResult.Ledger counts both kinds of
// call it takes out of the history, and limit caps them together.
//
// Two prunes at once would lock rollup rows in no particular order and
// could deadlock, so ledger prunes take turns on an advisory lock held
// until the statement commits. Admissions, finishes and resolutions lock
// the rollup rows of one call, its day's and then its minute's, and never
// wait on a prune's archive rows or executions (the prune skips what they
// lock), so they cannot close a cycle with it: a prune that holds a
// minute's row took its day's first.
func (s *Store) pruneLedger(ctx context.Context, before time.Time, limit int) (int, error) {
	batch := &pgx.Batch{}
	batch.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, pruneLedgerLockClass, s.schema)
	batch.Queue(s.sql(pruneLedgerSQL), before, limit)
	return s.batchCount(ctx, batch)
}

// batchCount sends a batch whose last statement returns a count, as one
// implicit transaction: what the earlier statements set or lock holds until
// it commits.
func (s *Store) batchCount(ctx context.Context, batch *pgx.Batch) (int, error) {
	br := s.pool.SendBatch(ctx, batch)
	var (
		n   int
		err error
	)
	for range batch.Len() - 1 {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
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
