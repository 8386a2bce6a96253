package memory

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// Prune implements storage.Store. Each kind is walked oldest first from its
// time-ordered queue, so one call costs what it deletes (plus the few old
// entries it must keep), not the size of the store.
func (s *Store) Prune(ctx context.Context, p storage.Prune) (storage.PruneResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.PruneResult{}, err
	}
	limit := p.Limit
	s.mu.Lock()
	defer s.mu.Unlock()
	res := storage.PruneResult{
		Idempotency:      s.pruneRecords(p.IdempotencyBefore, limit),
		Quotes:           s.pruneQuotes(p.QuotesBefore, limit),
		Ledger:           s.pruneLedger(p.LedgerBefore, limit),
		ApprovalRequests: s.pruneApprovalRequests(p.ApprovalRequestsBefore, limit),
		Events:           s.pruneEvents(p.EventsBefore, limit),
	}
	// Budgets' history is ledger too, and shares its cap, so that a caller
	// pruning until a batch comes back short also empties it.
	res.Ledger += s.pruneBudgets(p.LedgerBefore, limit-res.Ledger)
	return res, nil
}

// pruneRecords deletes idempotency records with their executions. The queue
// is ordered by creation, and a lease never ends before its record was
// created, so every prunable record lies in the walked prefix. The caller
// holds s.mu.
func (s *Store) pruneRecords(before time.Time, limit int) int {
	return s.recordQueue.drain(before, limit, func(k idemKey) verdict {
		rec := s.records[k]
		// A running execution whose lease ended before the cutoff was
		// abandoned by a dead process. Its reservation stays in the ledger:
		// the upstream may well have been called and billed.
		if !rec.Finished && !rec.LeaseUntil.Before(before) {
			return keep
		}
		// An ambiguous execution waits for a person, however long; its
		// record stays with it.
		if s.unresolved(rec.ExecutionID) {
			return keep
		}
		delete(s.records, k)
		if e, ok := s.executions[rec.ExecutionID]; ok {
			s.forget(e)
		}
		return drop
	})
}

// forget deletes an execution from the store and its principal's history.
// The caller holds s.mu.
func (s *Store) forget(e *storage.Execution) {
	delete(s.executions, e.ID)
	delete(s.receiptOf, e.ID)
	if h := s.histories[e.Principal].remove(e); len(h) > 0 {
		s.histories[e.Principal] = h
	} else {
		delete(s.histories, e.Principal)
	}
}

// pruneQuotes deletes expired quotes, except one whose call is still running:
// a takeover of that call presents the quote again. The caller holds s.mu.
func (s *Store) pruneQuotes(before time.Time, limit int) int {
	return s.quoteQueue.drain(before, limit, func(id uuid.UUID) verdict {
		q := s.quotes[id]
		if q.State == storage.QuoteUsed {
			if rec, ok := s.records[idemKey{q.Principal, q.UsedByKey}]; ok && !rec.Finished {
				return keep
			}
		}
		delete(s.quotes, id)
		s.markClosed(q.Principal, id)
		return drop
	})
}

// pruneLedger deletes old spend and call history, except reservations of
// executions still running, whose Finish must find them, or ambiguous,
// whose resolution must. The caller holds s.mu.
func (s *Store) pruneLedger(before time.Time, limit int) int {
	touched := make(map[string]struct{})
	n := s.ledgerQueue.drain(before, limit, func(r *ledgerRow) verdict {
		if s.reserving(r.execID) {
			return keep
		}
		r.pruned = true
		delete(s.ledgerByExec, r.execID)
		touched[r.principal] = struct{}{}
		return drop
	})
	// Both queues hold a principal's rows in the same order, so the rows
	// just pruned are that principal's oldest apart from running ones; the
	// walk stops at the first row that survived, whatever its age.
	for principal := range touched {
		pl := s.ledger[principal]
		pl.rows.drain(before, n, func(r *ledgerRow) verdict {
			switch {
			case r.pruned:
				r.addToBuckets(-1)
				return drop
			case s.reserving(r.execID):
				return keep
			default:
				return stop
			}
		})
		// Buckets empty out oldest first too; one kept for a reserving row
		// holds back the empty ones after it until that row goes.
		for lv := range pl.buckets {
			pl.buckets[lv].drain(before, n, func(b *ledgerBucket) verdict {
				if b.all.calls == 0 {
					return drop
				}
				return stop
			})
		}
		if pl.rows.len() == 0 {
			delete(s.ledger, principal)
		}
	}
	return n
}

// reserving reports whether execution id exists and still holds its
// reservation: running, or ambiguous and not resolved. The caller holds
// s.mu.
func (s *Store) reserving(id uuid.UUID) bool {
	e, ok := s.executions[id]
	return ok && (e.Status == storage.ExecutionRunning || e.Status == storage.ExecutionAmbiguous)
}

// unresolved reports whether execution id is ambiguous and waits for a
// person. The caller holds s.mu.
func (s *Store) unresolved(id uuid.UUID) bool {
	e, ok := s.executions[id]
	return ok && e.Status == storage.ExecutionAmbiguous
}
