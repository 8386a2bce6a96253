package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// BeginExecution admits a call atomically: it claims or takes over
// (principal, key), marks the quote used, and for a new claim checks
// b.Limits and reserves the amount. On any error nothing is written.
//
// Competing admissions of one principal are serialized by a row lock on the
// principal's principal_locks row, taken first and held until the
// transaction ends. Each later statement's snapshot (READ COMMITTED) then
// includes every admission the previous holders committed, so limits are
// measured and the reservation written with no other admission of that
// principal in between, on any process. Other principals are not held up.
//
// A new key, the usual case, costs one round trip: the lock and one
// statement that decides and writes, pipelined in one implicit transaction
// (see admitSQL). A key that is already claimed is left to takeOver.
//
// Admissions that arrive while another is in flight on this Store go
// together, in one round trip and one transaction (see admitbatch.go); a
// lone one is sent at once.
//
// A call that must wait for a lock (its batch gave up on one, or failed)
// waits as long as it takes, but holding up no other principal's calls:
// see waiting. While one does, the principal's next calls go the same way
// rather than into a batch, which they would hold up.
func (s *Store) BeginExecution(ctx context.Context, b storage.Begin) (storage.BeginResult, error) {
	return s.begin(ctx, toAdmit{Begin: b})
}

// toAdmit is one BeginExecution, and what memory answered the reads it was
// decided on, nil when the database did (see AdmitCall), for its
// admission to check first.
type toAdmit struct {
	storage.Begin
	recalled *recalled
}

// begin is BeginExecution of b, which on a stale recall fails with
// errStale, having written nothing.
func (s *Store) begin(ctx context.Context, b toAdmit) (storage.BeginResult, error) {
	out := admitOutcome{alone: true}
	if !s.waiting.busy(admitTurn(b.Principal)) {
		var err error
		if out, err = s.admissions.Do(ctx, b); err != nil {
			return storage.BeginResult{}, err
		}
	}
	if out.alone {
		out = s.admitWaiting(ctx, b)
	}
	if out.err != nil || !out.claimed {
		return out.res, out.err
	}
	return s.takeOverWaiting(ctx, b.Begin)
}

// admitTurn is the key of the turn that a principal's admissions waiting
// for a lock take (see waiting): each needs the principal's admission
// lock, which only one holds at a time.
func admitTurn(principal string) string { return "admit\x00" + principal }

// admitWaiting admits b alone, in tries that each wait for no lock longer
// than lockWait, until one is not refused a lock or ctx ends (see waiting).
func (s *Store) admitWaiting(ctx context.Context, b toAdmit) admitOutcome {
	var out admitOutcome
	if err := s.waiting.wait(ctx, admitTurn(b.Principal), func(ctx context.Context) bool {
		out = s.admit(ctx, b)
		return out.alone
	}); err != nil {
		return admitOutcome{err: err}
	}
	return out
}

// takeOverWaiting is takeOver in tries, as admitWaiting admits.
func (s *Store) takeOverWaiting(ctx context.Context, b storage.Begin) (res storage.BeginResult, err error) {
	if werr := s.waiting.wait(ctx, admitTurn(b.Principal), func(ctx context.Context) bool {
		res, err = s.takeOver(ctx, b)
		return waitedTooLong(err)
	}); werr != nil {
		return storage.BeginResult{}, werr
	}
	return res, err
}

// lockPrincipalSQL takes the principal's admission lock until the
// transaction ends, creating its row on first use, in one statement. An
// existing row, the usual case, is only locked (FOR NO KEY UPDATE, which
// waits for any holder): no new row version, no index entry, where an
// update to itself would write both on every admission. Only a first
// admission inserts, and a concurrent first insert is waited for and then
// locked in turn by the no-op update of ON CONFLICT. Processes of an
// earlier version lock the row with that no-op update on every admission;
// the two forms exclude each other, so a fleet mid-upgrade stays
// serialized per principal.
const lockPrincipalSQL = `
	WITH held AS (
		SELECT FROM {schema}.principal_locks WHERE principal = $1 FOR NO KEY UPDATE
	)
	INSERT INTO {schema}.principal_locks AS p (principal)
	SELECT $1 WHERE NOT EXISTS (SELECT FROM held)
	ON CONFLICT (principal) DO UPDATE SET principal = p.principal`

// admitSQL admits a call under a new key in one statement, run right after
// lockPrincipalSQL. It first decides (verdict), from one snapshot that the
// lock makes current, then writes only when the verdict is 'admit':
//
//   - 'claimed': the key has an execution; takeOver decides what that means.
//   - 'quote_not_found', 'quote_used': the quote is absent for the principal,
//     or used by another key.
//   - 'grant_unusable': the call carries a grant ($17) that is not an
//     approved request of the principal for this quote and tool. The
//     request's row is locked (grant_row), so no Prune can delete it before the
//     call marks it used (used_grant); without a grant, grant_row is empty.
//   - 'execution_exists': the execution id is taken, whatever the limits
//     say: by an execution, or by one pruned whose call the archive still
//     holds (spend_ledger, keyed by the id), which Prune could not archive
//     a second time.
//   - 'over_limit': a limit would be broken; failed lists each one.
//
// Under the principal's lock no other admission can claim the key, use the
// quote or reserve, so the decision holds when the writes run. The one
// writer outside the lock that could change a row decided on is Prune,
// deleting an expired quote: every insert therefore hangs off the quote's
// update (used_quote), and a quote pruned in between admits nothing (the
// caller reports it as not found). An execution id taken concurrently fails
// the insert with a unique violation, which rolls everything back. The
// reservation is the execution itself (see reservation.go): the statement
// counts the call and its amount in the day and minute rollups
// (day_rollup, then minute_rollup, which waits for it, the order every
// writer of the rollups locks a call's two rows in), as the ledger's
// insert trigger did when the reservation was a ledger row.
//
// $1 principal, $2-$7 limitArgs, $8 key, $9 fingerprint, $10 quote id,
// $11 execution id, $12 tool id, $13 amount, $14 lease token, $15 lease
// until, $16 now, $17 grant id (NULL without one), and what the audit
// trail shows: $18 tool slug, $19 manifest digest, $20 price, $21 fee, $22
// approval kind, $23 the rules that matched the call (JSON, NULL for none).
//
// It comes in two forms, admitSQL (no grant) and admitGrantSQL. Most calls
// carry no grant, and a statement pays at every execution for each table
// it names (its locks, its indexes opened for the writes), whether or not
// a row of it is touched: the form without a grant leaves approval_requests
// and its four indexes out.
//
// Each also comes in a form for a call decided on remembered reads
// (AdmitCall, answered from memory), which first checks them: 'stale' when the
// principal's spend controls are not those of $24 (the stored JSON, NULL
// for none) or, with $25, its approval of the tool is not the one $26 to
// $30 describe (present, digest, mode, approver, time). It comes before
// every other verdict, so that a call decided on out-of-date reads is
// decided again whatever else holds.
//
// And each comes in a form for a call in budgets (admitBudgetSQL), which
// also measures the budgets' limits (budgetLimitsCTE), records the call's
// budgets and days on its execution and counts it in their day rows
// (budgetRollupSQL). Its parameters follow the others': the budgets'
// limits (budgetLimitArgs.params), then the call's budgets and their days.
// A call in no budget runs a form that names none of their tables.
var (
	admitSQL                = admitStatement(false, false, false)
	admitGrantSQL           = admitStatement(true, false, false)
	admitRememberedSQL      = admitStatement(false, true, false)
	admitGrantRememberedSQL = admitStatement(true, true, false)

	admitBudgetSQL                = admitStatement(false, false, true)
	admitGrantBudgetSQL           = admitStatement(true, false, true)
	admitRememberedBudgetSQL      = admitStatement(false, true, true)
	admitGrantRememberedBudgetSQL = admitStatement(true, true, true)
)

// admitForms are the admission statements by whether the call carries a
// grant, was decided on remembered reads, and counts in budgets.
var admitForms = [2][2][2]string{
	{{admitSQL, admitBudgetSQL}, {admitRememberedSQL, admitRememberedBudgetSQL}},
	{{admitGrantSQL, admitGrantBudgetSQL}, {admitGrantRememberedSQL, admitGrantRememberedBudgetSQL}},
}

// admitStatement returns the admission statement with or without a grant,
// with or without the check of remembered reads, and with or without
// budgets.
func admitStatement(grant, remembered, budgets bool) string {
	staleCheck := ""
	if remembered {
		staleCheck = `
		WHEN (SELECT controls FROM {schema}.spend_controls WHERE principal = $1) IS DISTINCT FROM $24::jsonb
			OR ($25::boolean AND CASE WHEN $26::boolean
				THEN NOT EXISTS (SELECT FROM {schema}.approvals WHERE principal = $1 AND tool_id = $12
					AND manifest_digest = $27::text AND mode = $28::text AND approved_by = $29::text
					AND updated_at = $30::timestamptz)
				ELSE EXISTS (SELECT FROM {schema}.approvals WHERE principal = $1 AND tool_id = $12) END)
			THEN 'stale'`
	}
	grantRow, grantCheck, usedGrant := "", "", ""
	if grant {
		grantRow = `
grant_row AS (
	SELECT 1 FROM {schema}.approval_requests
	WHERE id = $17 AND principal = $1 AND quote_id = $10 AND tool_id = $12 AND status = 'approved'
	FOR UPDATE
),`
		grantCheck = `
		WHEN NOT EXISTS (SELECT FROM grant_row)
			THEN 'grant_unusable'`
		usedGrant = `
used_grant AS (
	UPDATE {schema}.approval_requests SET status = 'used', execution_id = $11
	WHERE id = $17 AND EXISTS (SELECT FROM used_quote)
),`
	}
	// The budget form's parameters come after all of the others.
	first := 24
	if remembered {
		first = 31
	}
	param := func(k int) string { return fmt.Sprintf("$%d", first+k) }
	checked, budgetLimits, budgetColumns, budgetValues, minuteReturning, budgetRollup := "limits", "", "", "", "", ""
	failedOldest, failedFrom := principalOldestSQL, "limits"
	if budgets {
		checked, failedFrom = "checked", "checked"
		budgetLimits = budgetLimitsCTE(first)
		budgetColumns = `, budgets, budget_days`
		budgetValues = `,
		NULLIF(` + param(9) + `::text[], '{}'), NULLIF(` + param(10) + `::text[], '{}')::date[]`
		minuteReturning = `
	RETURNING 1`
		budgetRollup = budgetRollupSQL(param(9), param(10))
		failedOldest = `CASE WHEN l.budget IS NULL THEN ` + principalOldestSQL + ` ELSE ` + budgetOldestSQL + ` END`
	}
	return `
WITH ` + limitsCTE + budgetLimits + `,` + grantRow + `
verdict AS (
	SELECT CASE` + staleCheck + `
		WHEN EXISTS (SELECT FROM {schema}.executions WHERE principal = $1 AND idempotency_key = $8)
			THEN 'claimed'
		WHEN NOT EXISTS (SELECT FROM {schema}.quotes WHERE id = $10 AND principal = $1)
			THEN 'quote_not_found'
		WHEN NOT EXISTS (SELECT FROM {schema}.quotes
			WHERE id = $10 AND principal = $1 AND (state = 'open' OR used_by_key = $8))
			THEN 'quote_used'` + grantCheck + `
		WHEN EXISTS (SELECT FROM {schema}.executions WHERE id = $11)
			OR EXISTS (SELECT FROM {schema}.spend_ledger WHERE execution_id = $11)
			THEN 'execution_exists'
		WHEN EXISTS (SELECT FROM ` + checked + `
			WHERE used + CASE measure WHEN 'spend' THEN $13::numeric ELSE 1 END > max)
			THEN 'over_limit'
		ELSE 'admit'
	END AS v
),
used_quote AS (
	UPDATE {schema}.quotes SET state = 'used', used_by_key = $8
	WHERE id = $10 AND principal = $1 AND (state = 'open' OR used_by_key = $8)
		AND (SELECT v FROM verdict) = 'admit'
	RETURNING 1
),` + usedGrant + `
execution AS (
	INSERT INTO {schema}.executions (id, principal, tool_id, quote_id, idempotency_key, status,
		amount_usd, charged, created_at, tool_slug, manifest_digest, price_usd, fee_usd, approval, grant_id,
		fingerprint, lease_token, lease_until, rules` + budgetColumns + `)
	SELECT $11::uuid, $1, $12::text, $10::uuid, $8, 'running', $13::numeric, false, $16::timestamptz,
		$18::text, $19::text, $20::numeric, $21::numeric, $22::text, $17::uuid,
		$9::text, $14::uuid, $15::timestamptz, $23::jsonb` + budgetValues + `
	FROM used_quote
	RETURNING amount_usd::text AS amount, created_at
),
day_rollup AS (
	INSERT INTO {schema}.spend_daily AS d (principal, day, tool_id, calls, spend_usd)
	SELECT $1, ($16::timestamptz AT TIME ZONE 'UTC')::date, $12::text, 1, $13::numeric
	FROM used_quote
	ON CONFLICT (principal, day, tool_id) DO UPDATE
	SET calls = d.calls + 1, spend_usd = d.spend_usd + EXCLUDED.spend_usd
	RETURNING 1
),
minute_rollup AS (
	INSERT INTO {schema}.spend_minute AS m (principal, minute, tool_id, calls, spend_usd)
	SELECT $1, date_trunc('minute', $16::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', $12::text, 1, $13::numeric
	FROM used_quote
	WHERE (SELECT count(*) FROM day_rollup) >= 0
	ON CONFLICT (principal, minute, tool_id) DO UPDATE
	SET calls = m.calls + 1, spend_usd = m.spend_usd + EXCLUDED.spend_usd` + minuteReturning + `
)` + budgetRollup + `,
failed AS (
	SELECT l.i, l.used, ` + failedOldest + ` AS oldest
	FROM ` + failedFrom + ` l
	WHERE (SELECT v FROM verdict) = 'over_limit'
		AND l.used + CASE l.measure WHEN 'spend' THEN $13::numeric ELSE 1 END > l.max
)
SELECT v.v, e.amount, e.created_at,
	(SELECT array_agg(i ORDER BY i) FROM failed),
	(SELECT array_agg(used::text ORDER BY i) FROM failed),
	(SELECT array_agg(oldest ORDER BY i) FROM failed)
FROM verdict v LEFT JOIN execution e ON true`
}

// principalOldestSQL is the creation time of the oldest call a failed
// limit l of the principal's own counts, for its LimitFailure.Oldest.
const principalOldestSQL = `least((
		SELECT min(e.created_at) FROM {schema}.executions e
		WHERE e.principal = $1 AND e.created_at >= l.since AND e.counted
			AND (l.tool_id = '' OR e.tool_id = l.tool_id)
			AND (l.measure = 'calls' OR ` + executionHoldsSpendSQL + `)
	), (
		SELECT min(s.created_at) FROM {schema}.spend_ledger s
		WHERE s.principal = $1 AND s.created_at >= l.since
			AND (l.tool_id = '' OR s.tool_id = l.tool_id)
			AND (l.measure = 'calls' OR s.state <> 'released')
	))`

// admission is one call's admission statement, ready to send alone or in
// a batch (see admitbatch.go).
type admission struct {
	b    storage.Begin
	sql  string
	args []any
	// budgets tells whether the statement counts the call in budgets, and
	// locks are their lock rows, in byte order of their ids.
	budgets bool
	locks   []string
}

// prepareAdmission builds b's admission statement: the form for its grant,
// its remembered reads and its budgets (see admitSQL), and its arguments.
func (s *Store) prepareAdmission(b toAdmit) (admission, error) {
	a := admission{b: b.Begin}
	own, budgetLimits, budgets, err := splitLimits(b.Limits)
	if err != nil {
		return a, err
	}
	a.budgets = budgets || len(b.Budgets) > 0
	var budgetIDs, budgetDayList []string
	if a.budgets {
		if budgetIDs, budgetDayList, a.locks, err = budgetDayArgs(b.Budgets, budgetLimits); err != nil {
			return a, err
		}
	} else {
		own = b.Limits
	}
	limits, err := newLimitArgs(own)
	if err != nil {
		return a, err
	}
	rules, err := rulesColumn(b.Rules)
	if err != nil {
		return a, err
	}
	a.args = append([]any{b.Principal}, limits.params()...)
	a.args = append(a.args, b.Key, b.Fingerprint, bytesOf(b.QuoteID), bytesOf(b.ExecutionID), b.ToolID,
		b.AmountUSD.String(), bytesOf(b.LeaseToken), b.LeaseUntil, b.Now, nullID(b.GrantID),
		b.ToolSlug, b.ManifestDigest, b.PriceUSD.String(), b.FeeUSD.String(), string(b.Approval), rules)
	a.sql = s.sql(admitForms[btoi(b.GrantID != uuid.Nil)][btoi(b.recalled != nil)][btoi(a.budgets)])
	if b.recalled != nil {
		expected, err := rememberedArgs(b.recalled)
		if err != nil {
			return a, err
		}
		a.args = append(a.args, expected...)
	}
	if a.budgets {
		a.args = append(a.args, budgetLimits.params()...)
		a.args = append(a.args, budgetIDs, budgetDayList)
	}
	return a, nil
}

// admitOutcome is what an admission came to: claimed reports that the key
// already has an execution, in which case nothing was written; alone,
// that nothing was written and the call is to be admitted again on its
// own (see admitBatch).
type admitOutcome struct {
	res     storage.BeginResult
	claimed bool
	alone   bool
	err     error
}

// admitVerdict is an admission statement's answer (see admitSQL).
type admitVerdict struct {
	verdict    string
	amount     *string
	createdAt  *time.Time
	failIndex  []int64
	failUsed   []string
	failOldest []*time.Time
}

func (v *admitVerdict) scan(row pgx.Row) error {
	return row.Scan(&v.verdict, &v.amount, &v.createdAt, &v.failIndex, &v.failUsed, &v.failOldest)
}

// admit runs the new-key path for one call alone: its lock and statement
// in one round trip. It gives up waiting for a lock after lockWait and
// answers alone, having written nothing: a batch of one then goes on as
// every call of a failed batch does, and a call already alone tries again
// (see waiting).
func (s *Store) admit(ctx context.Context, b toAdmit) admitOutcome {
	a, err := s.prepareAdmission(b)
	if err != nil {
		return admitOutcome{err: err}
	}
	// Used or refused, the quote is done with; a refusal is decided again
	// on fresh reads.
	defer s.memo.forgetQuote(b.QuoteID)

	// No BEGIN: a batch runs as one implicit transaction, committed when
	// the server reaches its end and rolled back on any error.
	batch := &pgx.Batch{}
	// Unless Config.SynchronousAdmission, the admission's commit does not
	// wait for the disk: visible to every session at once, durable with
	// the result's commit (see Durability in doc.go).
	batch.Queue(s.batchSettings(!s.syncAdmission, true))
	batch.Queue(s.sql(lockPrincipalSQL), b.Principal)
	if a.budgets {
		// After the principal's lock, in the order of the ids (see budget.go).
		if !s.budgets.all(a.locks) {
			batch.Queue(s.sql(ensureBudgetLocksSQL), a.locks)
		}
		batch.Queue(s.sql(lockBudgetsSQL), a.locks)
	}
	batch.Queue(a.sql, a.args...)
	br := s.pool.SendBatch(ctx, batch)
	var v admitVerdict
	for range batch.Len() - 1 {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if err == nil {
		err = v.scan(br.QueryRow())
	}
	// Close reports the commit's outcome: nothing counts before it.
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if waitedTooLong(err) {
		return admitOutcome{alone: true}
	}
	if err != nil {
		return admitOutcome{err: translate(err)}
	}
	return s.admitted(a, v)
}

// admitted turns the committed answer v of a's statement into its outcome.
func (s *Store) admitted(a admission, v admitVerdict) admitOutcome {
	b := a.b
	if a.budgets {
		s.budgets.add(a.locks)
	}
	switch v.verdict {
	case "admit":
	case "stale":
		// Forgotten, what was out of date is read afresh when the call is
		// decided again (AdmitCall).
		s.memo.forget(b.Principal, b.ToolID)
		return admitOutcome{err: errStale}
	case "claimed":
		return admitOutcome{claimed: true}
	case "quote_not_found":
		return admitOutcome{err: storage.ErrQuoteNotFound}
	case "quote_used":
		return admitOutcome{err: storage.ErrQuoteUsed}
	case "grant_unusable":
		return admitOutcome{err: storage.ErrGrantUnusable}
	case "execution_exists":
		return admitOutcome{err: storage.ErrAlreadyExists}
	case "over_limit":
		return admitOutcome{err: limitError(b.Limits, v.failIndex, v.failUsed, v.failOldest)}
	default:
		return admitOutcome{err: errors.New("postgres: unexpected admission verdict " + v.verdict)}
	}
	if v.amount == nil || v.createdAt == nil {
		// The quote was pruned between the decision and its update.
		return admitOutcome{err: storage.ErrQuoteNotFound}
	}
	d, err := parseDecimal(*v.amount)
	if err != nil {
		return admitOutcome{err: err}
	}
	// The amount and time as stored, so the caller sees what a read would.
	var res storage.BeginResult
	res.Execution = b.NewExecution()
	if len(b.Budgets) == 0 {
		res.Execution.Budgets = nil
		s.plain.add(b.ExecutionID)
	}
	// The caller's slice stays the caller's, as every execution read back
	// is; none is nil, as it reads back.
	res.Execution.Rules = nil
	if len(b.Rules) > 0 {
		res.Execution.Rules = slices.Clone(b.Rules)
	}
	res.Execution.AmountUSD = d
	res.Execution.CreatedAt = utc(*v.createdAt)
	return admitOutcome{res: res}
}

// rememberedArgs are $24 to $30 of an admission statement that checks the
// remembered reads r (see admitSQL).
func rememberedArgs(r *recalled) ([]any, error) {
	var controls []byte // NULL: the principal has none
	if r.read.SpendControls != nil {
		var err error
		if controls, err = marshalSpendControls(*r.read.SpendControls); err != nil {
			return nil, err
		}
	}
	a := r.read.Approval
	if a == nil {
		return []any{controls, r.approvalRead, false, nil, nil, nil, nil}, nil
	}
	return []any{controls, r.approvalRead, true, a.ManifestDigest, string(a.Mode), a.ApprovedBy, a.UpdatedAt}, nil
}

// limitError builds the *storage.LimitError of the limits admitSQL found
// broken, given by 1-based position.
func limitError(limits []storage.Limit, index []int64, used []string, oldest []*time.Time) error {
	if len(index) == 0 || len(used) != len(index) || len(oldest) != len(index) {
		return errors.New("postgres: over a limit, but none reported")
	}
	le := &storage.LimitError{Failures: make([]storage.LimitFailure, len(index))}
	for j, i := range index {
		u, err := parseDecimal(used[j])
		if err != nil {
			return err
		}
		le.Failures[j] = storage.LimitFailure{
			Index:  int(i - 1),
			Limit:  limits[i-1],
			Used:   u,
			Oldest: nullTime(oldest[j]),
		}
	}
	return le
}

// takeOver handles a key admit found claimed, in one transaction: when the
// key's execution has the same fingerprint, is still running and its lease
// ended before b.Now, its lease moves to this run and the execution is
// returned (its reservation is kept as it is, limits are not measured again
// and nothing is reserved twice); any other execution under the key is
// ErrIdempotencyConflict. Taking over is rare (a retry after a crash), so it
// keeps the plain statement-by-statement form. It waits for no lock longer
// than lockWait; takeOverWaiting tries again.
func (s *Store) takeOver(ctx context.Context, b storage.Begin) (storage.BeginResult, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return storage.BeginResult{}, translate(err)
	}
	// A no-op after Commit; on every error path it discards all writes.
	defer func() { _ = tx.Rollback(ctx) }()

	// It waits for no lock longer than lockWait: see takeOverWaiting.
	if _, err := tx.Exec(ctx, s.batchSettings(false, true)); err != nil {
		return storage.BeginResult{}, translate(err)
	}
	if _, err := tx.Exec(ctx, s.sql(lockPrincipalSQL), b.Principal); err != nil {
		return storage.BeginResult{}, translate(err)
	}
	exec, err := s.takeOverLease(ctx, tx, b)
	if err != nil {
		return storage.BeginResult{}, err
	}
	// The key comes before the quote so that a retry of a finished or
	// running call is answered from its execution, whatever became of its
	// quote.
	if err := s.useQuote(ctx, tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return storage.BeginResult{}, translate(err)
	}
	if exec.Budgets == nil {
		s.plain.add(exec.ID)
	}
	return storage.BeginResult{Execution: exec, TookOver: true}, nil
}

// takeOverLease moves the lease of an abandoned run to this one and
// returns its execution: same fingerprint, still running, lease ended
// before b.Now (the caller's clock, not the database's, so every process
// judges leases by the same rule). Any other execution under the key is
// ErrIdempotencyConflict, and so is one pruned since admit saw it: the
// caller reads the key again either way. Replacing the token is what makes
// the abandoned run's FinishExecution fail with ErrLeaseLost: the finish
// checks the token in the same row, and whichever of the two updates comes
// second waits for the first's row lock and then finds its condition false.
func (s *Store) takeOverLease(ctx context.Context, tx pgx.Tx, b storage.Begin) (storage.Execution, error) {
	exec, err := scanExecution(tx.QueryRow(ctx, s.sql(`
		UPDATE {schema}.executions SET lease_token = $3, lease_until = $4
		WHERE principal = $1 AND idempotency_key = $2 AND status = 'running' AND fingerprint = $5
			AND lease_until < $6
		RETURNING `+returnedColumns),
		b.Principal, b.Key, bytesOf(b.LeaseToken), b.LeaseUntil, b.Fingerprint, b.Now))
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Execution{}, storage.ErrIdempotencyConflict
	}
	return exec, err
}

// useQuote checks, for a takeover, that the quote is still this key's: a
// quote this key already used is the same logical call, not a reuse.
func (s *Store) useQuote(ctx context.Context, tx pgx.Tx, b storage.Begin) error {
	tag, err := tx.Exec(ctx, s.sql(`
		UPDATE {schema}.quotes SET state = 'used', used_by_key = $3
		WHERE id = $1 AND principal = $2 AND (state = 'open' OR used_by_key = $3)`),
		bytesOf(b.QuoteID), b.Principal, b.Key)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var exists bool
	if err := tx.QueryRow(ctx, s.sql(`
		SELECT EXISTS (SELECT 1 FROM {schema}.quotes WHERE id = $1 AND principal = $2)`),
		bytesOf(b.QuoteID), b.Principal).Scan(&exists); err != nil {
		return translate(err)
	}
	if !exists {
		return storage.ErrQuoteNotFound
	}
	return storage.ErrQuoteUsed
}
