package memory

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// Approval requests are kept by id, in one queue by expiry for Prune, and
// per principal in creation order, so that a listing visits the requests of
// the principals it is about, newest first, and stops at its limit. A
// request that names approvers is also queued under each of them, so that
// an approver's listing visits the requests named for it the same way,
// and under each budget it counted in, for the listing of an approver of
// budgets. A request's Input, Approvers and Budgets are copied in and out
// (see detached);
// nothing else it holds is shared.

// CreateApprovalRequest implements storage.Store. The quote's expiry
// changes under the same lock as the request is stored, and its place in
// the prune queue with it.
func (s *Store) CreateApprovalRequest(ctx context.Context, r storage.ApprovalRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r = detached(r)
	event := r.Event
	r.Event = nil
	if event != nil {
		if err := event.Check(); err != nil {
			return err
		}
	}
	if r.Status == "" {
		r.Status = storage.ApprovalPending
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	quote, ok := s.quotes[r.QuoteID]
	switch {
	case !ok || quote.Principal != r.Principal:
		return storage.ErrQuoteNotFound
	case quote.State == storage.QuoteUsed:
		return storage.ErrQuoteUsed
	case !quote.ExpiresAt.After(r.CreatedAt):
		return storage.ErrQuoteExpired
	}
	if _, ok := s.requests[r.ID]; ok {
		return storage.ErrAlreadyExists
	}
	if r.Status == storage.ApprovalPending {
		k := pendingKeyOf(r)
		if id, ok := s.pending[k]; ok {
			if p := s.requests[id]; p != nil && p.Status == storage.ApprovalPending && p.ExpiresAt.After(r.CreatedAt) {
				return &storage.PendingRequestError{Pending: detached(*p)}
			}
		}
		s.pending[k] = r.ID
	}
	if r.ExpiresAt.After(quote.ExpiresAt) {
		move(&s.quoteQueue, quote.ID, quote.ExpiresAt, r.ExpiresAt)
		quote.ExpiresAt = r.ExpiresAt
		s.markOpen(quote.Principal, quote.ID)
	}
	s.requests[r.ID] = &r
	s.requestQueue.push(r.ExpiresAt, r.ID)
	queueRequest(s.requestsBy, r.Principal, &r)
	for _, a := range slices.Compact(slices.Sorted(slices.Values(r.Approvers))) {
		queueRequest(s.requestsFor, a, &r)
	}
	for _, b := range slices.Compact(slices.Sorted(slices.Values(r.Budgets))) {
		queueRequest(s.requestsIn, b, &r)
	}
	if event != nil {
		s.addEvent(*event)
	}
	return nil
}

// GetApprovalRequest implements storage.Store.
func (s *Store) GetApprovalRequest(ctx context.Context, id uuid.UUID) (storage.ApprovalRequest, error) {
	if err := ctx.Err(); err != nil {
		return storage.ApprovalRequest{}, err
	}
	s.mu.Lock()
	r, ok := s.requests[id]
	var out storage.ApprovalRequest
	if ok {
		out = *r
	}
	s.mu.Unlock()
	if !ok {
		return storage.ApprovalRequest{}, storage.ErrNotFound
	}
	// Input, Approvers and Budgets are never written after creation, so they are
	// copied unlocked.
	return detached(out), nil
}

// ListApprovalRequests implements storage.Store. Each principal's requests
// are walked from the newest (or from the cursor) back, and so are each
// budget's and an approver's named requests, and each walk stops once it
// has given Limit matches it alone gave: no principal, budget or approver
// can contribute more. In an approver's view the principals' and budgets'
// walks pass over the requests that name approvers, which are the
// approver's walk's to give.
func (s *Store) ListApprovalRequests(ctx context.Context, f storage.ApprovalRequestFilter) ([]storage.ApprovalRequest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []storage.ApprovalRequest
	// A request of a principal listed may count in a budget listed too,
	// and in several: it is given once.
	given := map[uuid.UUID]bool{}
	walk := func(q *timeQueue[uuid.UUID], named bool) {
		if q == nil {
			return
		}
		items := q.items[:cut(q.items, requestCursor(f.After), queuedRequestPos)]
		for i, found := len(items)-1, 0; i >= 0 && found < f.Limit; i-- {
			r := s.requests[items[i].key]
			if r == nil || given[r.ID] || (f.Approver != "" && len(r.Approvers) > 0) != named || !f.Matches(*r) {
				continue
			}
			given[r.ID] = true
			out = append(out, *r)
			found++
		}
	}
	s.mu.Lock()
	for _, p := range uniq(f.Principals) {
		walk(s.requestsBy[p], false)
	}
	for _, b := range uniq(f.Budgets) {
		walk(s.requestsIn[b], false)
	}
	if f.Approver != "" {
		walk(s.requestsFor[f.Approver], true)
	}
	s.mu.Unlock()
	out = newestFirst(out, f.Limit, requestPos)
	for i := range out {
		out[i] = detached(out[i])
	}
	return out, nil
}

// DecideApprovalRequest implements storage.Store: the check and the write
// happen under one lock, so of racing decisions exactly one finds the
// request pending.
func (s *Store) DecideApprovalRequest(ctx context.Context, d storage.ApprovalDecision) (storage.ApprovalRequest, error) {
	if err := ctx.Err(); err != nil {
		return storage.ApprovalRequest{}, err
	}
	if d.Event != nil {
		if err := d.Event.Check(); err != nil {
			return storage.ApprovalRequest{}, err
		}
	}
	s.mu.Lock()
	r, ok := s.requests[d.ID]
	if !ok {
		s.mu.Unlock()
		return storage.ApprovalRequest{}, storage.ErrNotFound
	}
	switch {
	case r.Status != storage.ApprovalPending:
		s.mu.Unlock()
		return storage.ApprovalRequest{}, storage.ErrAlreadyDecided
	case !r.ExpiresAt.After(d.Now):
		s.mu.Unlock()
		return storage.ApprovalRequest{}, storage.ErrApprovalExpired
	}
	s.unpend(r)
	r.Status, r.DecidedBy, r.DecidedAt = storage.ApprovalDenied, d.DecidedBy, d.Now
	if d.Approve {
		r.Status, r.Remember = storage.ApprovalApproved, d.Remember
		if d.Standing() {
			s.putApproval(storage.Approval{
				Principal:      r.Principal,
				ToolID:         r.ToolID,
				ManifestDigest: r.ManifestDigest,
				Mode:           d.Remember,
				ApprovedBy:     d.DecidedBy,
				UpdatedAt:      d.Now,
			})
		}
	}
	if d.Event != nil {
		s.addEvent(*d.Event)
	}
	out := *r
	s.mu.Unlock()
	return detached(out), nil
}

// checkGrant is BeginExecution's check of a new call's grant. The caller
// holds s.mu.
func (s *Store) checkGrant(b storage.Begin) (*storage.ApprovalRequest, error) {
	if b.GrantID == uuid.Nil {
		return nil, nil
	}
	r, ok := s.requests[b.GrantID]
	if !ok || r.Status != storage.ApprovalApproved || r.Principal != b.Principal ||
		r.QuoteID != b.QuoteID || r.ToolID != b.ToolID {
		return nil, storage.ErrGrantUnusable
	}
	return r, nil
}

// pruneApprovalRequests deletes requests that expired before the cutoff,
// whatever their state: a grant no call can use any more, and a decision
// long made. The caller holds s.mu.
func (s *Store) pruneApprovalRequests(before time.Time, limit int) int {
	principals, approvers, budgets := map[string]bool{}, map[string]bool{}, map[string]bool{}
	n := s.requestQueue.drain(before, limit, func(id uuid.UUID) verdict {
		r := s.requests[id]
		principals[r.Principal] = true
		for _, a := range r.Approvers {
			approvers[a] = true
		}
		for _, b := range r.Budgets {
			budgets[b] = true
		}
		s.unpend(r)
		delete(s.requests, id)
		return drop
	})
	s.unqueueGone(s.requestsBy, principals)
	s.unqueueGone(s.requestsFor, approvers)
	s.unqueueGone(s.requestsIn, budgets)
	return n
}

// queueRequest queues r under key (a principal, or an approver it names)
// at its place in creation order.
func queueRequest(by map[string]*timeQueue[uuid.UUID], key string, r *storage.ApprovalRequest) {
	q := by[key]
	if q == nil {
		q = &timeQueue[uuid.UUID]{}
		by[key] = q
	}
	q.items = insert(q.items, timed[uuid.UUID]{at: r.CreatedAt, key: r.ID}, queuedRequestPos)
}

// unqueueGone drops the deleted requests from the queues of the keys
// touched, and a queue left empty. The caller holds s.mu.
func (s *Store) unqueueGone(by map[string]*timeQueue[uuid.UUID], touched map[string]bool) {
	for k := range touched {
		q := by[k]
		q.items = slices.DeleteFunc(q.items, func(it timed[uuid.UUID]) bool { return s.requests[it.key] == nil })
		q.shrink()
		if q.len() == 0 {
			delete(by, k)
		}
	}
}

// detached is r with its Input, Approvers and Budgets copied, so that
// neither the caller nor the store shares them with the other; an empty
// list is nil, as the durable stores read it back.
func detached(r storage.ApprovalRequest) storage.ApprovalRequest {
	r.Input = bytes.Clone(r.Input)
	r.Approvers = slices.Clone(r.Approvers)
	if len(r.Approvers) == 0 {
		r.Approvers = nil
	}
	r.Budgets = slices.Clone(r.Budgets)
	if len(r.Budgets) == 0 {
		r.Budgets = nil
	}
	return r
}

// pendingKey is what makes two pending requests the same request.
type pendingKey struct {
	principal   string
	quote       uuid.UUID
	inputSHA256 string
}

func pendingKeyOf(r storage.ApprovalRequest) pendingKey {
	return pendingKey{principal: r.Principal, quote: r.QuoteID, inputSHA256: r.InputSHA256}
}

// unpend forgets r as the pending request of its kind, when it is. The
// caller holds s.mu.
func (s *Store) unpend(r *storage.ApprovalRequest) {
	k := pendingKeyOf(*r)
	if s.pending[k] == r.ID {
		delete(s.pending, k)
	}
}
