package approvalpage

import (
	"context"
	"sync"
	"time"

	"github.com/toolgate/toolgate/toolgatetype"
)

// maxSessions bounds the memory a MemorySessionStore takes. Past it,
// expired sessions are dropped, then any one: only an approver can sign
// in, so only an approver can push others out.
const maxSessions = 10_000

// MemorySessionStore keeps sessions in this process's memory, the default.
// Sessions are few (one per person signed in), short, and losing them
// costs a person one sign-in. With several instances behind a load
// balancer, a session is known only to the instance that signed it in, so
// a person may be asked to sign in again when a request lands on another
// one; toolgatehttp.StoreSessions, over the store the instances share, avoids that.
type MemorySessionStore struct {
	clock toolgatetype.Clock
	mu    sync.Mutex
	all   map[string]Session
}

// Interface guard.
var _ SessionStore = (*MemorySessionStore)(nil)

// NewMemorySessionStore returns an empty store that tells expired sessions
// by clock; nil means the system's.
func NewMemorySessionStore(clock toolgatetype.Clock) *MemorySessionStore {
	if clock == nil {
		clock = systemClock{}
	}
	return &MemorySessionStore{clock: clock, all: map[string]Session{}}
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Create keeps s under id, first making room when the store is full.
func (m *MemorySessionStore) Create(_ context.Context, id string, s Session) error {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.all) >= maxSessions {
		for k, v := range m.all {
			if !now.Before(v.ExpiresAt) {
				delete(m.all, k)
			}
		}
	}
	for k := range m.all {
		if len(m.all) < maxSessions {
			break
		}
		delete(m.all, k)
	}
	m.all[id] = s
	return nil
}

// Get returns the live session under id; an expired one is forgotten.
func (m *MemorySessionStore) Get(_ context.Context, id string) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.all[id]
	if !ok {
		return Session{}, ErrSessionNotFound
	}
	if !m.clock.Now().Before(s.ExpiresAt) {
		delete(m.all, id)
		return Session{}, ErrSessionNotFound
	}
	return s, nil
}

// Delete forgets the session under id.
func (m *MemorySessionStore) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.all, id)
	return nil
}
