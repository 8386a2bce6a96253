package sqlite

import (
	"bytes"
	"context"

	"github.com/toolgate/toolgate/storage"
)

// FinishExecution records a running execution's outcome atomically: the
// execution's status and response (which finish its key's claim: the key
// is held by the execution's own row), and with them the reservation
// charged or released (it is read off the same row), and for completed
// executions the tool's usage counters. ErrLeaseLost when f.LeaseToken no
// longer holds the lease (a finished execution holds none, so a second
// finish gets it too), ErrNotFound when the execution does not exist.
//
// The rollups limits read follow by trigger (executions_settle in
// 0010_reservation_on_execution.sql): a release takes the amount out of
// its day's and minute's rows while the call still counts there; a charge
// leaves them as they are, and so does an ambiguous finish, whose
// reservation stays counted, as a running one's is, until
// ResolveExecution.
//
// Like BeginExecution it is one write, so exactly one of a late finish and
// a takeover of the same key wins, on any process.
//
// With f.Seal set, the same write seals the execution's receipt on the
// principal's chain and keeps it (see sealReceipt), and the execution
// names it; the response is stored without it (see storedResponse). The lease is checked first: a finish
// that loses its lease, or finds no execution, keeps no receipt; one
// whose Seal fails writes nothing and returns Seal's error.
//
// f.Events, and when f.Charged the events of the f.Alerts whose thresholds
// this charge reaches (see addAlerts), are inserted in the same write, so a
// finish refused writes none, and one that lands always has them.
func (s *Store) FinishExecution(ctx context.Context, f storage.Finish) error {
	if err := f.Check(); err != nil {
		return err
	}
	if err := storage.CheckEvents(f.Events, f.Alerts); err != nil {
		return err
	}
	return s.write(ctx, func(tx *writeTx) error {
		row, err := checkLease(tx, f)
		if err != nil {
			return err
		}
		response, seq, err := storedResponse(tx, f.Principal, f.ExecutionID, f.Response, f.Seal)
		if err != nil {
			return err
		}
		if _, err := tx.exec(`
			UPDATE executions SET status = ?, charged = ?, response = ?, receipt_seq = ?, finished_at = ? WHERE rowid = ?`,
			string(f.Status), boolInt(f.Charged), response, seq, nanos(f.Now), row.rowid); err != nil {
			return err
		}
		if f.Status == storage.ExecutionCompleted {
			if err := countUse(tx, row.toolID, f.Principal); err != nil {
				return err
			}
		}
		if err := addEvents(tx, f.Events); err != nil {
			return err
		}
		if f.Charged {
			return addAlerts(tx, f.Alerts)
		}
		return nil
	})
}

// leased is the execution checkLease found.
type leased struct {
	rowid  int64
	toolID string
}

// checkLease requires f's execution to exist for f.Principal under f.Key
// (ErrNotFound), still running with f.LeaseToken holding its lease
// (ErrLeaseLost), and returns where it is and its tool.
func checkLease(tx *writeTx, f storage.Finish) (leased, error) {
	var (
		row            leased
		principal, key string
		status         string
		token          []byte
	)
	err := translate(tx.queryRow(`
		SELECT rowid, principal, idempotency_key, tool_id, status, lease_token FROM executions WHERE id = ?`,
		idBytes(f.ExecutionID)).Scan(&row.rowid, &principal, &key, &row.toolID, &status, &token))
	switch {
	case err != nil:
		return leased{}, err // ErrNotFound when there is no such execution
	case principal != f.Principal || key != f.Key:
		return leased{}, storage.ErrNotFound
	case !bytes.Equal(token, idBytes(f.LeaseToken)) || status != string(storage.ExecutionRunning):
		return leased{}, storage.ErrLeaseLost
	}
	return row, nil
}
