package sqlite

import (
	"bytes"
	"context"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// FinishExecution records a running execution's outcome atomically: the
// idempotency record finished, the execution's status and response, the
// reservation charged or released, and for completed executions the tool's
// usage counters. ErrLeaseLost when f.LeaseToken no longer holds the lease
// (a finished execution holds none, so a second finish gets it too),
// ErrNotFound when the execution does not exist.
//
// An ambiguous execution's ledger row stays reserved, counted in the
// rollups and the limits as a running one's is, until ResolveExecution.
//
// Like BeginExecution it is one write, so exactly one of a late finish and
// a takeover of the same key wins, on any process.
//
// With f.Seal set, the same write seals the execution's receipt on the
// principal's chain and keeps it (see sealReceipt), and the response
// stored is the one Seal returned. The lease is checked first: a finish
// that loses its lease, or finds no execution, keeps no receipt; one
// whose Seal fails writes nothing and returns Seal's error.
func (s *Store) FinishExecution(ctx context.Context, f storage.Finish) error {
	if err := f.Check(); err != nil {
		return err
	}
	return s.write(ctx, func(tx *writeTx) error {
		toolID, err := checkLease(tx, f)
		if err != nil {
			return err
		}
		response := f.Response
		if f.Seal != nil {
			sealed, err := sealReceipt(tx, f.Principal, f.ExecutionID, f.Seal)
			if err != nil {
				return err
			}
			response = sealed.Response
		}
		if response == nil {
			// A finished execution always has a response, even an empty
			// one; NULL means "still running".
			response = []byte{}
		}
		if _, err := tx.exec(`
			UPDATE executions SET status = ?, charged = ?, response = ?, finished_at = ? WHERE id = ?`,
			string(f.Status), boolInt(f.Charged), response, nanos(f.Now), idBytes(f.ExecutionID)); err != nil {
			return err
		}
		if _, err := tx.exec(`UPDATE idempotency_records SET finished = 1 WHERE principal = ? AND key = ?`,
			f.Principal, f.Key); err != nil {
			return err
		}
		switch f.Status {
		case storage.ExecutionAmbiguous:
			return nil
		case storage.ExecutionCompleted:
			if err := countUse(tx, toolID, f.Principal); err != nil {
				return err
			}
		}
		return settle(tx, f.ExecutionID, f.Charged)
	})
}

// settle charges or releases an execution's reservation. Prune keeps the
// reservations of running and ambiguous executions, so the row is there;
// the state condition makes the update harmless if not. The rollups follow
// by trigger.
func settle(tx *writeTx, id uuid.UUID, charged bool) error {
	state := "released"
	if charged {
		state = "charged"
	}
	_, err := tx.exec(`UPDATE spend_ledger SET state = ? WHERE execution_id = ? AND state = 'reserved'`,
		state, idBytes(id))
	return err
}

// checkLease requires f's execution to exist for f.Principal under f.Key
// (ErrNotFound), still running with f.LeaseToken holding its record's lease
// (ErrLeaseLost), and returns the execution's tool.
func checkLease(tx *writeTx, f storage.Finish) (toolID string, err error) {
	var (
		principal, status string
		recordExec, token []byte
		finished          bool
	)
	err = translate(tx.queryRow(`
		SELECT e.principal, e.tool_id, e.status, i.execution_id, i.lease_token, coalesce(i.finished, 0)
		FROM executions e
		LEFT JOIN idempotency_records i ON i.principal = ? AND i.key = ?
		WHERE e.id = ?`,
		f.Principal, f.Key, idBytes(f.ExecutionID)).Scan(&principal, &toolID, &status, &recordExec, &token, &finished))
	switch {
	case err != nil:
		return "", err // ErrNotFound when there is no such execution
	case principal != f.Principal || !bytes.Equal(recordExec, idBytes(f.ExecutionID)):
		return "", storage.ErrNotFound
	case !bytes.Equal(token, idBytes(f.LeaseToken)) || finished || status != string(storage.ExecutionRunning):
		return "", storage.ErrLeaseLost
	}
	return toolID, nil
}
