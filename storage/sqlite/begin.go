package sqlite

import (
	"context"
	"slices"

	"github.com/toolgate/toolgate/storage"
)

// BeginExecution admits a call atomically: it claims or takes over
// (principal, key), marks the quote used, and for a new claim checks and
// uses its grant, checks b.Limits and reserves the amount. On any error
// nothing is written.
//
// It is one write (see writer): its reads and writes run in the file's
// write transaction, so no other admission, in this process or another,
// can claim the key, use the quote or reserve between its checks and its
// writes. Limits are measured against the history as the transaction sees
// it and compared in Go, with the caller's decimal limits.
//
// An admitted call is one row of executions, which carries its key's
// fingerprint and lease (0008_one_row_per_call.sql) and its reservation
// (0010_reservation_on_execution.sql) as well as the call: a new claim
// inserts it, and the insert's triggers count it in the day's and the
// minute's rollups and in each of its budgets (0012_budgets.sql); a
// takeover moves its lease.
func (s *Store) BeginExecution(ctx context.Context, b storage.Begin) (storage.BeginResult, error) {
	if err := checkMeasures(b.Limits); err != nil {
		return storage.BeginResult{}, err
	}
	if err := checkBudgets(b.Budgets); err != nil {
		return storage.BeginResult{}, err
	}
	amount, err := units(b.AmountUSD)
	if err != nil {
		return storage.BeginResult{}, err
	}
	budgets, err := budgetsColumn(b.Budgets)
	if err != nil {
		return storage.BeginResult{}, err
	}
	rules, err := rulesColumn(b.Rules)
	if err != nil {
		return storage.BeginResult{}, err
	}
	var res storage.BeginResult
	err = s.write(ctx, func(tx *writeTx) error {
		claimed, err := checkKey(tx, b)
		if err != nil {
			return err
		}
		// The key is checked before the quote so that a retry of a finished
		// or running call is answered from its execution, whatever became
		// of its quote. The quote is checked and marked used in one
		// statement: should a later check refuse the call, the write rolls
		// back and the quote stays as it was.
		if err := useQuote(tx, b); err != nil {
			return err
		}
		if claimed != 0 {
			res, err = takeOver(tx, b, claimed)
			return err
		}
		res, err = admit(tx, b, amount, budgets, rules)
		return err
	})
	if err != nil {
		return storage.BeginResult{}, err
	}
	return res, nil
}

// checkKey reads the execution of (b.Principal, b.Key). claimed is its
// rowid when b may take it over: the same fingerprint, still running, and
// a lease that ended before b.Now (the caller's clock, not the database's,
// so every process judges leases by the same rule); 0 when there is none.
// Any other execution is ErrIdempotencyConflict.
func checkKey(tx *writeTx, b storage.Begin) (claimed int64, err error) {
	var (
		fingerprint, status string
		leaseUntil          int64
	)
	err = translate(tx.queryRow(`
		SELECT rowid, fingerprint, status, lease_until FROM executions WHERE principal = ? AND idempotency_key = ?`,
		b.Principal, b.Key).Scan(&claimed, &fingerprint, &status, &leaseUntil))
	switch {
	case isNotFound(err):
		return 0, nil
	case err != nil:
		return 0, err
	case status != string(storage.ExecutionRunning) || fingerprint != b.Fingerprint || leaseUntil >= nanos(b.Now):
		return 0, storage.ErrIdempotencyConflict
	}
	return claimed, nil
}

// useQuote marks b's quote used by b.Key. The quote must exist for
// b.Principal (ErrQuoteNotFound) and be open or already used by this very
// key (a takeover, or a retry of a key whose execution was pruned: the
// same logical call, not a reuse); otherwise ErrQuoteUsed.
func useQuote(tx *writeTx, b storage.Begin) error {
	n, err := tx.exec(`
		UPDATE quotes SET state = 'used', used_by_key = ?1
		WHERE id = ?2 AND principal = ?3 AND (state = 'open' OR used_by_key = ?1)`,
		b.Key, idBytes(b.QuoteID), b.Principal)
	if err != nil || n == 1 {
		return err
	}
	// Refused: read why, which only a refusal pays for.
	var principal string
	err = translate(tx.queryRow(`SELECT principal FROM quotes WHERE id = ?`, idBytes(b.QuoteID)).Scan(&principal))
	switch {
	case isNotFound(err):
		return storage.ErrQuoteNotFound
	case err != nil:
		return err
	case principal != b.Principal:
		return storage.ErrQuoteNotFound
	}
	return storage.ErrQuoteUsed
}

// takeOver moves the lease of an abandoned run, the execution at rowid, to
// b's and returns the execution: its reservation is kept as it is, limits
// are not measured again and nothing is reserved twice. Replacing the
// token is what makes the abandoned run's FinishExecution fail with
// ErrLeaseLost.
func takeOver(tx *writeTx, b storage.Begin, rowid int64) (storage.BeginResult, error) {
	e, err := scanExecution(tx.queryRow(`
		UPDATE executions SET lease_token = ?, lease_until = ? WHERE rowid = ?
		RETURNING `+begunColumns,
		idBytes(b.LeaseToken), nanos(b.LeaseUntil), rowid))
	if err != nil {
		return storage.BeginResult{}, err
	}
	return storage.BeginResult{Execution: e, TookOver: true}, nil
}

// admit checks a new claim's grant and limits, then writes the running
// execution, which is the claim of its key and the reservation, in its
// budgets too (budgets, the column: see budgets.go), with the rules that
// matched it (rules, the column: see rulesColumn), and the used grant.
func admit(tx *writeTx, b storage.Begin, amount int64, budgets, rules any) (storage.BeginResult, error) {
	if err := checkGrant(tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	price, err := units(b.PriceUSD)
	if err != nil {
		return storage.BeginResult{}, err
	}
	fee, err := units(b.FeeUSD)
	if err != nil {
		return storage.BeginResult{}, err
	}
	// Measured before the execution is inserted: limits read running
	// executions too, and a call must not count against itself. So a taken
	// execution id (ids are new UUIDs: a caller's mistake) is
	// ErrAlreadyExists only once the limits pass; either way nothing is
	// written. The key cannot be taken: checkKey found no execution under
	// it in this same write.
	if err := checkLimits(tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	// An id is taken by an execution (the insert fails on its key) and
	// also by one pruned whose call the archive still holds: admitted
	// again, it would have Prune archive the id twice, which the
	// archive's unique key refuses, and every later Prune would fail.
	now := nanos(b.Now)
	inserted, err := tx.exec(`
		INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged, created_at,
			tool_slug, manifest_digest, price, fee, approval, grant_id, fingerprint, lease_token, lease_until, budgets, rules)
		SELECT ?, ?, ?, ?, ?, 'running', ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
		WHERE NOT EXISTS (SELECT 1 FROM spend_ledger WHERE execution_id = ?)`,
		idBytes(b.ExecutionID), b.Principal, b.ToolID, idBytes(b.QuoteID), b.Key, amount, now,
		b.ToolSlug, b.ManifestDigest, price, fee, string(b.Approval), nullableID(b.GrantID),
		b.Fingerprint, idBytes(b.LeaseToken), nanos(b.LeaseUntil), budgets, rules, idBytes(b.ExecutionID))
	if err != nil {
		return storage.BeginResult{}, err
	}
	if inserted == 0 {
		return storage.BeginResult{}, storage.ErrAlreadyExists
	}
	if err := useGrant(tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	e := b.NewExecution()
	e.AmountUSD, e.CreatedAt = fromUnits(amount), fromNanos(now)
	// The caller's slice stays the caller's, as every execution read back
	// is; none is nil, as it reads back.
	e.Budgets, e.Rules = nil, nil
	if len(b.Budgets) > 0 {
		e.Budgets = slices.Clone(b.Budgets)
	}
	if len(b.Rules) > 0 {
		e.Rules = slices.Clone(b.Rules)
	}
	return storage.BeginResult{Execution: e}, nil
}

// checkLimits measures each of b.Limits, in-flight reservations included,
// and returns a *storage.LimitError listing every one the call would break.
func checkLimits(tx *writeTx, b storage.Begin) error {
	if len(b.Limits) == 0 {
		return nil
	}
	measured, err := measureAll(tx, b.Principal, b.Limits)
	if err != nil {
		return err
	}
	var failures []storage.LimitFailure
	for i, l := range b.Limits {
		used := measured[i]
		next := used.Add(b.AmountUSD)
		if l.Measure == storage.MeasureCalls {
			next = used.Add(one)
		}
		if !next.GreaterThan(l.Max) {
			continue
		}
		first, err := oldest(tx, b.Principal, l)
		if err != nil {
			return err
		}
		failures = append(failures, storage.LimitFailure{Index: i, Limit: l, Used: used, Oldest: first})
	}
	if len(failures) > 0 {
		return &storage.LimitError{Failures: failures}
	}
	return nil
}
