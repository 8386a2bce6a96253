package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// Stored Response slices are set by FinishExecution (and replaced whole by
// ResolveExecution) and never written in place, so readers copy the struct
// under the lock and clone the bytes, joined with the execution's receipt
// (see receiptOf), after releasing it. A Resolution is
// set once and never written again, but callers get a copy of their own.

// GetIdempotency implements storage.Store.
func (s *Store) GetIdempotency(ctx context.Context, principal, key string) (storage.IdempotencyRecord, error) {
	if err := ctx.Err(); err != nil {
		return storage.IdempotencyRecord{}, err
	}
	s.mu.Lock()
	rec, ok := s.records[idemKey{principal, key}]
	var out storage.IdempotencyRecord
	var signed []byte
	if ok {
		out = *rec
		signed = s.receiptOf[rec.ExecutionID]
	}
	s.mu.Unlock()
	if !ok {
		return storage.IdempotencyRecord{}, storage.ErrNotFound
	}
	out.Response = response(out.Response, signed)
	return out, nil
}

// GetExecution implements storage.Store.
func (s *Store) GetExecution(ctx context.Context, id uuid.UUID) (storage.Execution, error) {
	if err := ctx.Err(); err != nil {
		return storage.Execution{}, err
	}
	s.mu.Lock()
	e, ok := s.executions[id]
	var out storage.Execution
	var signed []byte
	if ok {
		out = copyExecution(e)
		signed = s.receiptOf[id]
	}
	s.mu.Unlock()
	if !ok {
		return storage.Execution{}, storage.ErrNotFound
	}
	out.Response = response(out.Response, signed)
	return out, nil
}

// copyExecution copies e, its resolution, budgets and rules included,
// leaving the Response shared for the caller to clone once the lock is
// released.
func copyExecution(e *storage.Execution) storage.Execution {
	out := *e
	out.Budgets = slices.Clone(e.Budgets)
	out.Rules = slices.Clone(e.Rules)
	if e.Resolution != nil {
		r := *e.Resolution
		out.Resolution = &r
	}
	return out
}

// BeginExecution implements storage.Store. Every check runs before the first
// write, under one lock, which is what makes it all-or-nothing.
func (s *Store) BeginExecution(ctx context.Context, b storage.Begin) (storage.BeginResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.BeginResult{}, err
	}
	if err := validateLimits(b.Limits); err != nil {
		return storage.BeginResult{}, err
	}
	if err := validateBudgets(b.Budgets); err != nil {
		return storage.BeginResult{}, err
	}
	k := idemKey{b.Principal, b.Key}

	s.mu.Lock()
	defer s.mu.Unlock()

	// The key is checked before the quote so that a retry of a finished or
	// running call is answered from its record, whatever became of the quote.
	rec, claimed := s.records[k]
	if claimed && (rec.Finished || rec.Fingerprint != b.Fingerprint || !rec.LeaseUntil.Before(b.Now)) {
		return storage.BeginResult{}, storage.ErrIdempotencyConflict
	}

	q, ok := s.quotes[b.QuoteID]
	if !ok || q.Principal != b.Principal {
		return storage.BeginResult{}, storage.ErrQuoteNotFound
	}
	// A quote already used by this very key is the takeover (or a retry of
	// a key whose record was pruned): the same logical call, not a reuse.
	if q.State == storage.QuoteUsed && q.UsedByKey != b.Key {
		return storage.BeginResult{}, storage.ErrQuoteUsed
	}

	if claimed {
		e, ok := s.executions[rec.ExecutionID]
		if !ok {
			// Records and executions are created and pruned together.
			return storage.BeginResult{}, fmt.Errorf("memory: record for key %q has no execution %s", b.Key, rec.ExecutionID)
		}
		q.State, q.UsedByKey = storage.QuoteUsed, b.Key
		s.markClosed(q.Principal, q.ID)
		rec.LeaseToken, rec.LeaseUntil = b.LeaseToken, b.LeaseUntil
		return storage.BeginResult{Execution: copyExecution(e), TookOver: true}, nil
	}

	grant, err := s.checkGrant(b)
	if err != nil {
		return storage.BeginResult{}, err
	}
	if _, dup := s.executions[b.ExecutionID]; dup {
		return storage.BeginResult{}, storage.ErrAlreadyExists
	}
	if failures := s.checkLimits(b); len(failures) > 0 {
		return storage.BeginResult{}, &storage.LimitError{Failures: failures}
	}

	q.State, q.UsedByKey = storage.QuoteUsed, b.Key
	s.markClosed(q.Principal, q.ID)
	if grant != nil {
		grant.Status, grant.ExecutionID = storage.ApprovalUsed, b.ExecutionID
	}
	exec := b.NewExecution()
	exec.Budgets = slices.Clone(b.Budgets) // the caller's slice stays the caller's
	exec.Rules = nil                       // none is nil, as the durable stores read it back
	if len(b.Rules) > 0 {
		exec.Rules = slices.Clone(b.Rules)
	}
	e := &exec
	s.executions[e.ID] = e
	s.histories[e.Principal] = s.histories[e.Principal].add(e)
	s.records[k] = &storage.IdempotencyRecord{
		Principal:   b.Principal,
		Key:         b.Key,
		Fingerprint: b.Fingerprint,
		ExecutionID: e.ID,
		LeaseToken:  b.LeaseToken,
		LeaseUntil:  b.LeaseUntil,
		CreatedAt:   b.Now,
	}
	s.recordQueue.push(b.Now, k)
	s.addLedgerRow(&ledgerRow{
		principal: b.Principal,
		execID:    e.ID,
		toolID:    b.ToolID,
		amount:    b.AmountUSD,
		createdAt: b.Now,
		state:     ledgerReserved,
	})
	s.addBudgetRows(e)
	return storage.BeginResult{Execution: copyExecution(e)}, nil
}

// checkLimits returns every limit b would break. The caller holds s.mu.
func (s *Store) checkLimits(b storage.Begin) []storage.LimitFailure {
	var failures []storage.LimitFailure
	for i, l := range b.Limits {
		used, oldest := s.measure(b.Principal, l)
		next := used.Add(b.AmountUSD)
		if l.Measure == storage.MeasureCalls {
			next = used.Add(one)
		}
		if next.GreaterThan(l.Max) {
			failures = append(failures, storage.LimitFailure{Index: i, Limit: l, Used: used, Oldest: oldest})
		}
	}
	return failures
}

// FinishExecution implements storage.Store. A finished execution no longer
// holds a lease, so finishing it again fails with ErrLeaseLost rather than
// charging or counting it twice. An ambiguous one keeps its ledger row
// reserved, where it counts as a running one's does.
func (s *Store) FinishExecution(ctx context.Context, f storage.Finish) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := f.Check(); err != nil {
		return err
	}
	if err := storage.CheckEvents(f.Events, f.Alerts); err != nil {
		return err
	}
	// The response is shared by execution and record and never written
	// again: the store's own copy, without the receipt, kept apart.
	resp := bytes.Clone(f.Response)
	var receipt *sealed
	if f.Seal != nil {
		var err error
		if receipt, err = s.seal(f.Principal, f.Seal); err != nil {
			return err
		}
		defer receipt.release()
	}

	s.mu.Lock()
	defer s.mu.Unlock()

	e, ok := s.executions[f.ExecutionID]
	if !ok || e.Principal != f.Principal {
		return storage.ErrNotFound
	}
	rec, ok := s.records[idemKey{f.Principal, f.Key}]
	if !ok || rec.ExecutionID != e.ID {
		return storage.ErrNotFound
	}
	if rec.LeaseToken != f.LeaseToken || rec.Finished || e.Status != storage.ExecutionRunning {
		return storage.ErrLeaseLost
	}

	e.Status, e.Charged, e.Response, e.FinishedAt = f.Status, f.Charged, resp, f.Now
	rec.Finished, rec.Response = true, resp
	if receipt != nil {
		s.storeReceipt(receipt, e.Principal, e.ID)
	}
	// Prune keeps the rows of running executions, so the row is there; the
	// check only keeps a broken invariant from panicking the gateway.
	if f.Status == storage.ExecutionAmbiguous {
		s.waiting[e.ID] = e.CreatedAt
	} else {
		if r, ok := s.ledgerByExec[e.ID]; ok {
			settle(r, f.Charged)
		}
		s.settleBudgets(e.ID, f.Charged)
	}
	if f.Status == storage.ExecutionCompleted {
		s.countUse(e.ToolID, e.Principal)
	}
	for _, ev := range f.Events {
		s.addEvent(ev)
	}
	if f.Charged {
		s.addAlerts(f.Alerts)
	}
	return nil
}
