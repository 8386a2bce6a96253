package memory

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// outbox is the store's events (storage.Outbox), guarded by Store.mu like
// everything an event is written with, so that an event and its cause are
// one step.
type outbox struct {
	events map[string]*storage.Event
	// delivered and failed count events ever delivered or failed for
	// good, by type; pruning does not lower them.
	delivered map[string]int64
	failed    map[string]int64
}

func newOutbox() outbox {
	return outbox{events: map[string]*storage.Event{}, delivered: map[string]int64{}, failed: map[string]int64{}}
}

// addEvent writes e unless its id is taken, and reports whether it did.
// The caller holds s.mu and has checked e.
func (s *Store) addEvent(e storage.NewEvent) bool {
	if _, ok := s.outbox.events[e.ID]; ok {
		return false
	}
	s.outbox.events[e.ID] = &storage.Event{
		ID: e.ID, Type: e.Type, Payload: bytes.Clone(e.Payload), CreatedAt: e.CreatedAt,
		Status: storage.EventPending, NextAttemptAt: e.CreatedAt, RetryingSince: e.CreatedAt,
	}
	return true
}

// addAlerts writes the events of the alerts whose thresholds the budgets'
// charged spend has reached. The caller holds s.mu and has checked them.
func (s *Store) addAlerts(alerts []storage.BudgetAlert) {
	for _, a := range alerts {
		if _, ok := s.outbox.events[a.Event.ID]; ok {
			continue
		}
		used := decimal.Zero
		for _, g := range s.budgetSummary(storage.SpendQuery{Budget: a.Budget, FromDay: a.FromDay, UntilDay: a.UntilDay, GroupBy: toolgatetype.SpendByDay}) {
			used = used.Add(g.TotalUSD)
		}
		if used.LessThan(a.Threshold) {
			continue
		}
		e := a.Event
		e.Payload, _ = storage.WithUsed(e.Payload, used) // checked by checkEvents
		s.addEvent(e)
	}
}

// AddEvent implements storage.Outbox.
func (s *Store) AddEvent(ctx context.Context, e storage.NewEvent) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := e.Check(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addEvent(e), nil
}

// ClaimEvents implements storage.Outbox.
func (s *Store) ClaimEvents(ctx context.Context, c storage.ClaimEvents) ([]storage.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*storage.Event
	for _, e := range s.outbox.events {
		if e.Status == storage.EventPending && !e.NextAttemptAt.After(c.Now) && !e.LeaseUntil.After(c.Now) {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b *storage.Event) int {
		return cmp.Or(a.NextAttemptAt.Compare(b.NextAttemptAt), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	out := make([]storage.Event, 0, min(len(due), c.Limit))
	for _, e := range due[:min(len(due), c.Limit)] {
		e.LeaseToken, e.LeaseUntil = uuid.New(), c.Now.Add(c.Lease)
		e.Attempts++
		out = append(out, copyEvent(e))
	}
	return out, nil
}

// EventAttempted implements storage.Outbox.
func (s *Store) EventAttempted(ctx context.Context, a storage.EventAttempt) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.outbox.events[a.ID]
	switch {
	case !ok:
		return storage.ErrNotFound
	case e.Status != storage.EventPending || e.LeaseToken != a.LeaseToken:
		return storage.ErrLeaseLost
	}
	e.LeaseToken, e.LeaseUntil = uuid.Nil, time.Time{}
	if a.LastError != "" {
		e.LastError = truncate(a.LastError, storage.MaxEventErrorLength)
	}
	switch a.Status {
	case storage.EventDelivered:
		e.Status, e.FinishedAt = storage.EventDelivered, a.Now
		s.outbox.delivered[e.Type]++
	case storage.EventFailed:
		e.Status, e.FinishedAt = storage.EventFailed, a.Now
		s.outbox.failed[e.Type]++
	default:
		e.NextAttemptAt = a.RetryAt
	}
	return nil
}

// ListEvents implements storage.Outbox.
func (s *Store) ListEvents(ctx context.Context, f storage.EventFilter) ([]storage.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []*storage.Event
	for _, e := range s.outbox.events {
		if f.Status != "" && e.Status != f.Status {
			continue
		}
		if f.Before != nil && !olderEvent(e, f.Before) {
			continue
		}
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *storage.Event) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	out := make([]storage.Event, 0, min(len(all), f.Limit))
	for _, e := range all[:min(len(all), f.Limit)] {
		out = append(out, copyEvent(e))
	}
	return out, nil
}

// olderEvent reports whether e comes after the cursor in a listing.
func olderEvent(e *storage.Event, c *storage.EventCursor) bool {
	return e.CreatedAt.Before(c.CreatedAt) || e.CreatedAt.Equal(c.CreatedAt) && e.ID < c.ID
}

// RetryEvents implements storage.Outbox.
func (s *Store) RetryEvents(ctx context.Context, r storage.RetryEvents) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	retry := func(e *storage.Event) int {
		if e.Status != storage.EventFailed {
			return 0
		}
		e.Status, e.FinishedAt = storage.EventPending, time.Time{}
		e.NextAttemptAt, e.RetryingSince = r.Now, r.Now
		return 1
	}
	if r.ID != "" {
		e, ok := s.outbox.events[r.ID]
		if !ok {
			return 0, storage.ErrNotFound
		}
		return retry(e), nil
	}
	n := 0
	for _, e := range s.outbox.events {
		n += retry(e)
	}
	return n, nil
}

// EventStats implements storage.Outbox.
func (s *Store) EventStats(ctx context.Context) (storage.EventStats, error) {
	if err := ctx.Err(); err != nil {
		return storage.EventStats{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := storage.EventStats{Delivered: map[string]int64{}, Failed: map[string]int64{}}
	for _, e := range s.outbox.events {
		if e.Status != storage.EventPending {
			continue
		}
		st.Pending++
		if st.OldestPending.IsZero() || e.CreatedAt.Before(st.OldestPending) {
			st.OldestPending = e.CreatedAt
		}
	}
	for typ, n := range s.outbox.delivered {
		st.Delivered[typ] = n
	}
	for typ, n := range s.outbox.failed {
		st.Failed[typ] = n
	}
	return st, nil
}

// pruneEvents deletes up to limit events delivered before before. The
// caller holds s.mu.
func (s *Store) pruneEvents(before time.Time, limit int) int {
	n := 0
	for id, e := range s.outbox.events {
		if n >= limit {
			break
		}
		if e.Status == storage.EventDelivered && e.FinishedAt.Before(before) {
			delete(s.outbox.events, id)
			n++
		}
	}
	return n
}

func copyEvent(e *storage.Event) storage.Event {
	out := *e
	out.Payload = bytes.Clone(e.Payload)
	return out
}

// truncate cuts s to at most n bytes, on a character's boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
