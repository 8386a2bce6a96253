package memory

import (
	"bytes"
	"context"

	"github.com/toolgate/toolgate/storage"
)

// ResolveExecution implements storage.Store. Its checks and writes run
// under the one lock, so of two resolutions of one execution the second
// finds it resolved, and the ledger row is settled once.
func (s *Store) ResolveExecution(ctx context.Context, r storage.Resolve) (storage.Execution, error) {
	if err := ctx.Err(); err != nil {
		return storage.Execution{}, err
	}
	if err := r.Check(); err != nil {
		return storage.Execution{}, err
	}
	if err := storage.CheckEvents(nil, r.Alerts); err != nil {
		return storage.Execution{}, err
	}
	resp := bytes.Clone(r.Response) // shared by execution and record; never written again
	charged := r.Outcome == storage.ExecutionCompleted

	// The receipt is sealed on the principal's chain, which needs the
	// principal: read under the lock, then checked again below.
	var receipt *sealed
	if r.Seal != nil {
		s.mu.Lock()
		e, ok := s.executions[r.ExecutionID]
		var principal string
		if ok {
			principal = e.Principal
		}
		s.mu.Unlock()
		if !ok {
			return storage.Execution{}, storage.ErrNotFound
		}
		var err error
		if receipt, err = s.seal(principal, r.Seal); err != nil {
			return storage.Execution{}, err
		}
		defer receipt.release()
	}

	s.mu.Lock()
	e, ok := s.executions[r.ExecutionID]
	switch {
	case !ok:
		s.mu.Unlock()
		return storage.Execution{}, storage.ErrNotFound
	case e.Resolution != nil:
		s.mu.Unlock()
		return storage.Execution{}, storage.ErrAlreadyResolved
	case e.Status != storage.ExecutionAmbiguous:
		s.mu.Unlock()
		return storage.Execution{}, storage.ErrNotAmbiguous
	}

	e.Status, e.Charged, e.Response = r.Outcome, charged, resp
	delete(s.waiting, e.ID)
	e.Resolution = &storage.ExecutionResolution{
		Outcome:    r.Outcome,
		ResolvedBy: r.ResolvedBy,
		ResolvedAt: r.Now,
		Note:       r.Note,
	}
	// Records and executions are created and pruned together, and Prune
	// keeps an unresolved execution's ledger row; the checks only keep a
	// broken invariant from panicking the gateway.
	if rec, ok := s.records[idemKey{e.Principal, e.IdempotencyKey}]; ok && rec.ExecutionID == e.ID {
		rec.Response = resp
	}
	if row, ok := s.ledgerByExec[e.ID]; ok {
		settle(row, charged)
	}
	s.settleBudgets(e.ID, charged)
	if charged {
		s.countUse(e.ToolID, e.Principal)
		s.addAlerts(r.Alerts)
	}
	if receipt != nil {
		s.storeReceipt(receipt, e.Principal, e.ID)
	}
	out := copyExecution(e)
	signed := s.receiptOf[e.ID]
	s.mu.Unlock()
	out.Response = response(out.Response, signed)
	return out, nil
}
