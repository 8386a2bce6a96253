package sqlite

import (
	"context"

	"github.com/toolgate/toolgate/storage"
)

// ResolveExecution records a person's finding about an ambiguous execution:
// its status, the resolution, the resolved response (kept once, on the
// execution, which a replay of its key reads), with them the reservation
// charged or released (read off the same row; a release takes the amount
// out of the rollups by trigger, as FinishExecution's does) and, for
// completed, the tool's usage counters. ErrNotFound, ErrAlreadyResolved or
// ErrNotAmbiguous otherwise.
//
// It is one write (see writer): the check and the changes run in the
// file's write transaction, so of two resolutions, in this process or
// another, the second finds the execution resolved and the rollups move
// once.
//
// With r.Seal set, the same write seals the resolution's receipt on the
// execution's principal's chain and keeps it (see sealReceipt), and the
// execution names it in place of its finish's. A resolution refused keeps no
// receipt; one whose Seal fails writes nothing and returns Seal's error.
// A resolution as completed writes, in the same write, the events of the
// r.Alerts whose thresholds its charge reaches (see addAlerts).
func (s *Store) ResolveExecution(ctx context.Context, r storage.Resolve) (storage.Execution, error) {
	if err := r.Check(); err != nil {
		return storage.Execution{}, err
	}
	if err := storage.CheckEvents(nil, r.Alerts); err != nil {
		return storage.Execution{}, err
	}
	charged := r.Outcome == storage.ExecutionCompleted
	var out storage.Execution
	err := s.write(ctx, func(tx *writeTx) error {
		e, err := getExecution(tx, r.ExecutionID)
		switch {
		case err != nil:
			return err // ErrNotFound when there is no such execution
		case e.Resolution != nil:
			return storage.ErrAlreadyResolved
		case e.Status != storage.ExecutionAmbiguous:
			return storage.ErrNotAmbiguous
		}
		response, seq, err := storedResponse(tx, e.Principal, r.ExecutionID, r.Response, r.Seal)
		if err != nil {
			return err
		}
		// A resolution without a receipt leaves none named: the finish's
		// is not the resolved response's.
		if _, err := tx.exec(`
			UPDATE executions SET status = ?, charged = ?, response = ?, receipt_seq = ?,
				resolution_outcome = ?, resolved_by = ?, resolved_at = ?, resolution_note = ?
			WHERE id = ?`,
			string(r.Outcome), boolInt(charged), response, seq,
			string(r.Outcome), r.ResolvedBy, nanos(r.Now), r.Note, idBytes(r.ExecutionID)); err != nil {
			return err
		}
		if charged {
			if err := countUse(tx, e.ToolID, e.Principal); err != nil {
				return err
			}
			if err := addAlerts(tx, r.Alerts); err != nil {
				return err
			}
		}
		out, err = getExecution(tx, r.ExecutionID)
		return err
	})
	if err != nil {
		return storage.Execution{}, err
	}
	return out, nil
}
