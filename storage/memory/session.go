package memory

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// Sessions and secrets are kept apart from the rest, under their own lock:
// a page view never waits for a call's admission.

// CreateSession implements storage.SessionStore. Sessions that expired
// before s.CreatedAt are forgotten first.
func (s *Store) CreateSession(ctx context.Context, sess storage.Session) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.side.Lock()
	defer s.side.Unlock()
	if s.sessions == nil {
		s.sessions = map[string]storage.Session{}
	}
	if _, ok := s.sessions[sess.ID]; ok {
		return storage.ErrAlreadyExists
	}
	for id, old := range s.sessions {
		if old.ExpiresAt.Before(sess.CreatedAt) {
			delete(s.sessions, id)
		}
	}
	s.sessions[sess.ID] = sess
	return nil
}

// GetSession implements storage.SessionStore.
func (s *Store) GetSession(ctx context.Context, id string, now time.Time) (storage.Session, error) {
	if err := ctx.Err(); err != nil {
		return storage.Session{}, err
	}
	s.side.Lock()
	defer s.side.Unlock()
	sess, ok := s.sessions[id]
	if !ok || !now.Before(sess.ExpiresAt) {
		return storage.Session{}, storage.ErrNotFound
	}
	return sess, nil
}

// DeleteSession implements storage.SessionStore.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.side.Lock()
	defer s.side.Unlock()
	delete(s.sessions, id)
	return nil
}

// Secret implements storage.SecretStore.
func (s *Store) Secret(ctx context.Context, name string, candidate []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.side.Lock()
	defer s.side.Unlock()
	if s.secrets == nil {
		s.secrets = map[string][]byte{}
	}
	kept, ok := s.secrets[name]
	if !ok {
		kept = append([]byte(nil), candidate...)
		s.secrets[name] = kept
	}
	return append([]byte(nil), kept...), nil
}
