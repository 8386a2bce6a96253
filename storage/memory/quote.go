package memory

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// CreateQuote implements storage.Store.
func (s *Store) CreateQuote(ctx context.Context, q storage.Quote) error {
	return s.CreateQuoteCapped(ctx, q, 0)
}

// CreateQuoteCapped implements storage.Store. The principal's open quotes
// are kept in a set of their own (openQuotes), so the usual quote, far
// below its cap, costs one more map insert; only a principal at its cap
// has its set walked, which drops the quotes expired since.
func (s *Store) CreateQuoteCapped(ctx context.Context, q storage.Quote, max int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.quotes[q.ID]; ok {
		return storage.ErrAlreadyExists
	}
	if max > 0 && len(s.openQuotes[q.Principal]) >= max {
		if first, n := s.sweepOpen(q.Principal, q.CreatedAt); n >= max {
			return &storage.OpenQuotesError{Max: max, FirstExpiry: first}
		}
	}
	s.quotes[q.ID] = &q
	s.quoteQueue.push(q.ExpiresAt, q.ID)
	if q.State != storage.QuoteUsed {
		s.markOpen(q.Principal, q.ID)
	}
	return nil
}

// sweepOpen drops from the principal's open set the quotes expired at now
// and returns how many are left and the earliest expiry among them. The
// caller holds s.mu.
func (s *Store) sweepOpen(principal string, now time.Time) (first time.Time, n int) {
	set := s.openQuotes[principal]
	for id := range set {
		q := s.quotes[id]
		if !q.ExpiresAt.After(now) {
			delete(set, id)
			continue
		}
		if first.IsZero() || q.ExpiresAt.Before(first) {
			first = q.ExpiresAt
		}
	}
	return first, len(set)
}

// markOpen puts a quote in its principal's open set: when it is created
// open, and again when an approval request extends its life, in case a
// sweep dropped it as expired by a clock ahead of the request's. The
// caller holds s.mu.
func (s *Store) markOpen(principal string, id uuid.UUID) {
	set := s.openQuotes[principal]
	if set == nil {
		set = make(map[uuid.UUID]struct{})
		s.openQuotes[principal] = set
	}
	set[id] = struct{}{}
}

// markClosed takes a quote out of its principal's open set, when a call
// uses it or Prune deletes it. The caller holds s.mu.
func (s *Store) markClosed(principal string, id uuid.UUID) {
	set := s.openQuotes[principal]
	delete(set, id)
	if len(set) == 0 {
		delete(s.openQuotes, principal)
	}
}

// GetQuote implements storage.Store.
func (s *Store) GetQuote(ctx context.Context, id uuid.UUID) (storage.Quote, error) {
	if err := ctx.Err(); err != nil {
		return storage.Quote{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.quotes[id]
	if !ok {
		return storage.Quote{}, storage.ErrNotFound
	}
	return *q, nil
}
