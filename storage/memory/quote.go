package memory

import (
	"context"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// CreateQuote implements storage.Store.
func (s *Store) CreateQuote(ctx context.Context, q storage.Quote) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.quotes[q.ID]; ok {
		return storage.ErrAlreadyExists
	}
	s.quotes[q.ID] = &q
	s.quoteQueue.push(q.ExpiresAt, q.ID)
	return nil
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
