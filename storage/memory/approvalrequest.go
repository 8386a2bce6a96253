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
// the principals it is about, newest first, and stops at its limit.
// A request's Input is copied in and out; nothing else it holds is shared.

// CreateApprovalRequest implements storage.Store. The quote's expiry
// changes under the same lock as the request is stored, and its place in
// the prune queue with it.
func (s *Store) CreateApprovalRequest(ctx context.Context, r storage.ApprovalRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r.Input = bytes.Clone(r.Input)
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
				out := *p
				out.Input = bytes.Clone(out.Input)
				return &storage.PendingRequestError{Pending: out}
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
	q := s.requestsBy[r.Principal]
	if q == nil {
		q = &timeQueue[uuid.UUID]{}
		s.requestsBy[r.Principal] = q
	}
	q.items = insert(q.items, timed[uuid.UUID]{at: r.CreatedAt, key: r.ID}, queuedRequestPos)
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
	// Input is never written after creation, so it is copied unlocked.
	out.Input = bytes.Clone(out.Input)
	return out, nil
}

// ListApprovalRequests implements storage.Store. Each principal's requests
// are walked from the newest (or from the cursor) back, and the walk stops
// once a principal has given Limit matches: no principal can contribute
// more.
func (s *Store) ListApprovalRequests(ctx context.Context, f storage.ApprovalRequestFilter) ([]storage.ApprovalRequest, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []storage.ApprovalRequest
	s.mu.Lock()
	for _, p := range uniq(f.Principals) {
		q := s.requestsBy[p]
		if q == nil {
			continue
		}
		items := q.items[:cut(q.items, requestCursor(f.After), queuedRequestPos)]
		for i, found := len(items)-1, 0; i >= 0 && found < f.Limit; i-- {
			r := s.requests[items[i].key]
			if r == nil || !f.Matches(*r) {
				continue
			}
			out = append(out, *r)
			found++
		}
	}
	s.mu.Unlock()
	out = newestFirst(out, f.Limit, requestPos)
	for i := range out {
		out[i].Input = bytes.Clone(out[i].Input)
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
	out.Input = bytes.Clone(out.Input)
	return out, nil
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
	touched := map[string]bool{}
	n := s.requestQueue.drain(before, limit, func(id uuid.UUID) verdict {
		touched[s.requests[id].Principal] = true
		s.unpend(s.requests[id])
		delete(s.requests, id)
		return drop
	})
	for p := range touched {
		q := s.requestsBy[p]
		q.items = slices.DeleteFunc(q.items, func(it timed[uuid.UUID]) bool { return s.requests[it.key] == nil })
		q.shrink()
		if q.len() == 0 {
			delete(s.requestsBy, p)
		}
	}
	return n
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
