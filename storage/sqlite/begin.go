package sqlite

import (
	"context"
	"errors"
	"fmt"

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
// writes. Limits are measured in Go against the ledger as the transaction
// sees it, with the caller's decimal limits.
func (s *Store) BeginExecution(ctx context.Context, b storage.Begin) (storage.BeginResult, error) {
	if err := checkMeasures(b.Limits); err != nil {
		return storage.BeginResult{}, err
	}
	amount, err := units(b.AmountUSD)
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
		// or running call is answered from its record, whatever became of
		// its quote.
		if err := checkQuote(tx, b); err != nil {
			return err
		}
		if claimed {
			res, err = takeOver(tx, b)
			return err
		}
		res, err = admit(tx, b, amount)
		return err
	})
	if err != nil {
		return storage.BeginResult{}, err
	}
	return res, nil
}

// checkKey reads the record of (b.Principal, b.Key). claimed is true when
// there is one that b may take over: the same fingerprint, not finished,
// and a lease that ended before b.Now (the caller's clock, not the
// database's, so every process judges leases by the same rule). Any other
// record is ErrIdempotencyConflict.
func checkKey(tx *writeTx, b storage.Begin) (claimed bool, err error) {
	var (
		fingerprint string
		finished    bool
		leaseUntil  int64
	)
	err = translate(tx.queryRow(`
		SELECT fingerprint, finished, lease_until FROM idempotency_records WHERE principal = ? AND key = ?`,
		b.Principal, b.Key).Scan(&fingerprint, &finished, &leaseUntil))
	switch {
	case isNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	case finished || fingerprint != b.Fingerprint || leaseUntil >= nanos(b.Now):
		return false, storage.ErrIdempotencyConflict
	}
	return true, nil
}

// checkQuote requires b's quote to exist for b.Principal and to be open or
// already used by this very key (a takeover, or a retry of a key whose
// record was pruned: the same logical call, not a reuse).
func checkQuote(tx *writeTx, b storage.Begin) error {
	var principal, state, usedBy string
	err := translate(tx.queryRow(`SELECT principal, state, used_by_key FROM quotes WHERE id = ?`,
		idBytes(b.QuoteID)).Scan(&principal, &state, &usedBy))
	switch {
	case isNotFound(err):
		return storage.ErrQuoteNotFound
	case err != nil:
		return err
	case principal != b.Principal:
		return storage.ErrQuoteNotFound
	case state == string(storage.QuoteUsed) && usedBy != b.Key:
		return storage.ErrQuoteUsed
	}
	return nil
}

// useQuote marks b's quote used by b.Key.
func useQuote(tx *writeTx, b storage.Begin) error {
	_, err := tx.exec(`UPDATE quotes SET state = 'used', used_by_key = ? WHERE id = ?`, b.Key, idBytes(b.QuoteID))
	return err
}

// takeOver moves the lease of an abandoned run to b's and returns the
// original execution: its reservation is kept as it is, limits are not
// measured again and nothing is reserved twice. Replacing the token is what
// makes the abandoned run's FinishExecution fail with ErrLeaseLost.
func takeOver(tx *writeTx, b storage.Begin) (storage.BeginResult, error) {
	var rawID []byte
	if err := tx.queryRow(`
		UPDATE idempotency_records SET lease_token = ?, lease_until = ?
		WHERE principal = ? AND key = ?
		RETURNING execution_id`,
		idBytes(b.LeaseToken), nanos(b.LeaseUntil), b.Principal, b.Key).Scan(&rawID); err != nil {
		return storage.BeginResult{}, translate(err)
	}
	if err := useQuote(tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	id, err := parseID(rawID)
	if err != nil {
		return storage.BeginResult{}, err
	}
	e, err := getExecution(tx, id)
	if errors.Is(err, storage.ErrNotFound) {
		// Records and executions are created and pruned together.
		return storage.BeginResult{}, fmt.Errorf("sqlite: record for key %q has no execution %s", b.Key, id)
	}
	if err != nil {
		return storage.BeginResult{}, err
	}
	return storage.BeginResult{Execution: e, TookOver: true}, nil
}

// admit checks a new claim's grant, execution id and limits, then writes
// the claim, the used quote and grant, the running execution and its
// reservation.
func admit(tx *writeTx, b storage.Begin, amount int64) (storage.BeginResult, error) {
	if err := checkGrant(tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	var taken bool
	if err := tx.queryRow(`SELECT EXISTS (SELECT 1 FROM executions WHERE id = ?)`, idBytes(b.ExecutionID)).Scan(&taken); err != nil {
		return storage.BeginResult{}, translate(err)
	}
	if taken {
		return storage.BeginResult{}, storage.ErrAlreadyExists
	}
	if err := checkLimits(tx, b); err != nil {
		return storage.BeginResult{}, err
	}

	if err := useQuote(tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	if err := useGrant(tx, b); err != nil {
		return storage.BeginResult{}, err
	}
	now := nanos(b.Now)
	if _, err := tx.exec(`
		INSERT INTO idempotency_records (principal, key, fingerprint, execution_id, lease_token, lease_until, finished, created_at)
		VALUES (?, ?, ?, ?, ?, ?, 0, ?)`,
		b.Principal, b.Key, b.Fingerprint, idBytes(b.ExecutionID), idBytes(b.LeaseToken), nanos(b.LeaseUntil), now); err != nil {
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
	if _, err := tx.exec(`
		INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged, created_at,
			tool_slug, manifest_digest, price, fee, approval, grant_id)
		VALUES (?, ?, ?, ?, ?, 'running', ?, 0, ?, ?, ?, ?, ?, ?, ?)`,
		idBytes(b.ExecutionID), b.Principal, b.ToolID, idBytes(b.QuoteID), b.Key, amount, now,
		b.ToolSlug, b.ManifestDigest, price, fee, string(b.Approval), nullableID(b.GrantID)); err != nil {
		return storage.BeginResult{}, err
	}
	if _, err := tx.exec(`
		INSERT INTO spend_ledger (execution_id, principal, tool_id, amount, state, created_at, minute, day)
		VALUES (?, ?, ?, ?, 'reserved', ?, ?, ?)`,
		idBytes(b.ExecutionID), b.Principal, b.ToolID, amount, now,
		floorDiv(now, nanosPerMinute), floorDiv(now, nanosPerDay)); err != nil {
		return storage.BeginResult{}, err
	}
	e := b.NewExecution()
	e.AmountUSD, e.CreatedAt = fromUnits(amount), fromNanos(now)
	return storage.BeginResult{Execution: e}, nil
}

// checkLimits measures each of b.Limits, in-flight reservations included,
// and returns a *storage.LimitError listing every one the call would break.
func checkLimits(tx *writeTx, b storage.Begin) error {
	var failures []storage.LimitFailure
	for i, l := range b.Limits {
		used, err := measure(tx, b.Principal, l)
		if err != nil {
			return err
		}
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
