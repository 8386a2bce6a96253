package sqlite

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// pruneStep is how many rows one write of Prune deletes at most. Prune
// deletes in steps so that calls, whose writes share the one writer, never
// wait behind a long deletion: each step is a write of its own, committed
// before the next.
const pruneStep = 100

// Prune deletes what the retention policy no longer needs, at most p.Limit
// rows of each kind, in steps of at most pruneStep rows. A zero cutoff
// prunes nothing of that kind. Receipts are never deleted: a chain is
// verified from its first receipt, so it outlives the executions it names.
//
// Deleted rows leave free pages in the file, which later writes reuse: the
// file grows to hold what retention keeps at the busiest, and no further
// (see the package documentation).
func (s *Store) Prune(ctx context.Context, p storage.Prune) (storage.PruneResult, error) {
	limit := p.Limit
	var (
		res storage.PruneResult
		err error
	)
	if !p.IdempotencyBefore.IsZero() {
		if res.Idempotency, err = s.pruneSteps(ctx, limit, p.IdempotencyBefore, pruneRecords); err != nil {
			return res, err
		}
	}
	if !p.QuotesBefore.IsZero() {
		if res.Quotes, err = s.pruneSteps(ctx, limit, p.QuotesBefore, pruneQuotes); err != nil {
			return res, err
		}
	}
	if !p.LedgerBefore.IsZero() {
		if res.Ledger, err = s.pruneSteps(ctx, limit, p.LedgerBefore, pruneLedger); err != nil {
			return res, err
		}
		// The budgets' history goes with the ledger's cutoff, up to the
		// limit too. PruneResult.Ledger counts calls, as every store's
		// does, so these rows are not in it.
		if _, err = s.pruneSteps(ctx, limit, p.LedgerBefore, pruneBudgets); err != nil {
			return res, err
		}
	}
	if !p.ApprovalRequestsBefore.IsZero() {
		if res.ApprovalRequests, err = s.pruneSteps(ctx, limit, p.ApprovalRequestsBefore, pruneApprovalRequests); err != nil {
			return res, err
		}
	}
	if !p.EventsBefore.IsZero() {
		if res.Events, err = s.pruneSteps(ctx, limit, p.EventsBefore, pruneEvents); err != nil {
			return res, err
		}
	}
	return res, nil
}

// pruneSteps runs step, one write at a time, until it has deleted limit
// rows or finds fewer than it was allowed.
func (s *Store) pruneSteps(ctx context.Context, limit int, before time.Time, step func(tx *writeTx, before int64, n int) (int, error)) (int, error) {
	total := 0
	for total < limit {
		n := min(pruneStep, limit-total)
		var deleted int
		err := s.write(ctx, func(tx *writeTx) error {
			var err error
			deleted, err = step(tx, nanos(before), n)
			return err
		})
		if err != nil {
			return total, err
		}
		total += deleted
		if deleted < n {
			break
		}
	}
	return total, nil
}

// pruneRecords deletes up to n executions, and with them their
// Idempotency-Keys, that are finished and were created before the cutoff,
// or running with a lease that ended before it: such a run was abandoned
// by a dead process. A run with a live lease keeps its execution, and so
// does an ambiguous execution until it is resolved, however old. Every
// such execution was created before the cutoff too (a lease never ends
// before its admission), which is the order the walk takes; the
// unresolved ones it passes over are those a person has yet to look at,
// few.
//
// An execution whose call still counts in the limits' history leaves its
// row in the ledger, in the same statement (the trigger
// executions_archive, 0010_reservation_on_execution.sql), with its
// reservation's state: an abandoned run's stays reserved, since the
// upstream may well have been called and billed. The rollups count the
// call already, and do not change.
func pruneRecords(tx *writeTx, before int64, n int) (int, error) {
	deleted, err := tx.exec(`
		DELETE FROM executions WHERE rowid IN (
			SELECT rowid FROM executions
			WHERE created_at < ?1
			AND (status IN ('completed', 'failed') OR (status = 'running' AND lease_until < ?1))
			ORDER BY created_at LIMIT ?2)`, before, n)
	return int(deleted), err
}

// pruneQuotes deletes up to n quotes that expired before the cutoff, except
// one whose call is still running: a takeover of that call presents it
// again.
func pruneQuotes(tx *writeTx, before int64, n int) (int, error) {
	deleted, err := tx.exec(`
		DELETE FROM quotes WHERE id IN (
			SELECT q.id FROM quotes q
			WHERE q.expires_at < ?1
			AND NOT (q.state = 'used' AND EXISTS (
				SELECT 1 FROM executions e
				WHERE e.principal = q.principal AND e.idempotency_key = q.used_by_key AND e.status = 'running'))
			ORDER BY q.expires_at LIMIT ?2)`, before, n)
	return int(deleted), err
}

// pruneLedger takes up to n calls created before the cutoff out of the
// spend and call history limits read, whichever row holds them: first the
// ledger's archived rows, deleted, then executions that still count,
// uncounted (counted = 0) and kept for their results until their own
// prune. The triggers take each out of its rollups, and drop a rollup row
// that counts no call any more. A call still running, or ambiguous and
// not resolved, keeps counting whatever its age: it is reserved until its
// FinishExecution or its resolution charges or releases it, which must
// then move the rollups once. Archived rows never are such a call: their
// executions are gone.
//
// The executions are walked by creation (executions_created_at) from the
// oldest; those passed over are the running and ambiguous ones and, when
// results are kept longer than the history, the uncounted ones still
// awaiting their own prune.
func pruneLedger(tx *writeTx, before int64, n int) (int, error) {
	archived, err := tx.exec(`
		DELETE FROM spend_ledger WHERE id IN (
			SELECT id FROM spend_ledger WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)`, before, n)
	if err != nil || int(archived) == n {
		return int(archived), err
	}
	uncounted, err := tx.exec(`
		UPDATE executions SET counted = 0 WHERE rowid IN (
			SELECT rowid FROM executions
			WHERE created_at < ?1 AND counted = 1 AND status NOT IN ('running', 'ambiguous')
			ORDER BY created_at LIMIT ?2)`, before, n-int(archived))
	return int(archived + uncounted), err
}

// budgetHistory are the tables of the budgets' history (0012_budgets.sql),
// each keyed by budget first, and how to delete up to ?3 rows of budget ?1
// older than ?2 from each: a range of its key.
var budgetHistory = []struct {
	table, delete string
	byDay         bool // ?2 is the first day kept; otherwise the first instant
}{
	{"budget_daily", `DELETE FROM budget_daily WHERE (budget, day, tool_id) IN (
		SELECT budget, day, tool_id FROM budget_daily WHERE budget = ?1 AND day < ?2 ORDER BY day LIMIT ?3)`, true},
	{"budget_spend", `DELETE FROM budget_spend WHERE (budget, day, principal, tool) IN (
		SELECT budget, day, principal, tool FROM budget_spend WHERE budget = ?1 AND day < ?2 ORDER BY day LIMIT ?3)`, true},
	{"budget_calls", `DELETE FROM budget_calls WHERE (budget, created_at, execution_id) IN (
		SELECT budget, created_at, execution_id FROM budget_calls WHERE budget = ?1 AND created_at < ?2 ORDER BY created_at LIMIT ?3)`, false},
}

// maxZoneOffset is the furthest ahead of UTC a time zone's clocks are.
const maxZoneOffset = 14 * time.Hour

// pruneBudgets deletes up to n rows of the budgets' history: the days
// before the UTC date of the cutoff minus one day, so that no zone's day
// that a limit or a summary may still look at goes (the cutoff is older
// than every window, and a zone's day ends at most a day after the UTC
// day of that date). A budget's calls one by one are dated by their
// creation, and go once created before that first kept day began in the
// zone furthest ahead: then their day is before it in every zone. The
// calls of a budget that were still running or ambiguous go too: their
// days are outside every window, so whatever becomes of them moves no
// limit; a release finds their day's row gone and leaves it so.
//
// Each table is walked budget by budget, each budget's old rows a range
// of the table's key, and the budgets themselves found by one seek each
// on the key, so a step reads what it deletes and a few entries more,
// however long the history kept.
func pruneBudgets(tx *writeTx, before int64, n int) (int, error) {
	first := fromNanos(before).AddDate(0, 0, -1)
	firstDay := first.Format(dayLayout)
	callsBefore := nanos(time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, time.UTC).Add(-maxZoneOffset))
	deleted := 0
	for _, h := range budgetHistory {
		var bound any = callsBefore
		if h.byDay {
			bound = firstDay
		}
		for budget := ""; deleted < n; {
			err := translate(tx.queryRow(`SELECT budget FROM `+h.table+` WHERE budget > ? ORDER BY budget LIMIT 1`, budget).Scan(&budget))
			if isNotFound(err) {
				break
			}
			if err != nil {
				return deleted, err
			}
			k, err := tx.exec(h.delete, budget, bound, n-deleted)
			if err != nil {
				return deleted, err
			}
			deleted += int(k)
		}
	}
	return deleted, nil
}
