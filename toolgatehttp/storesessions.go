package toolgatehttp

import (
	"context"
	"errors"
	"time"

	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// StoreSessions keeps the sessions in a storage.SessionStore: the store the
// instances of a gateway share. Every page reads a session from the store,
// so a person who signed in through one instance is known to all, and a
// sign-out through any ends the session on every one at once, with no
// grace period. The store holds only the SHA-256 of each session's token.
//
// It lives here, where a server is assembled from the gateway, its store
// and the pages, rather than in approvalpage: the pages know sessions only
// as an approvalpage.SessionStore, never the store they are kept in.
type StoreSessions struct {
	store storage.SessionStore
	clock toolgatetype.Clock
}

// Interface guard.
var _ approvalpage.SessionStore = (*StoreSessions)(nil)

// NewStoreSessions returns sessions kept in store, telling expired ones by
// clock (nil means the system's).
func NewStoreSessions(store storage.SessionStore, clock toolgatetype.Clock) *StoreSessions {
	if clock == nil {
		clock = systemClock{}
	}
	return &StoreSessions{store: store, clock: clock}
}

// Create keeps s under id.
func (s *StoreSessions) Create(ctx context.Context, id string, sess approvalpage.Session) error {
	return s.store.CreateSession(ctx, storage.Session{
		ID:        id,
		Approver:  sess.Approver,
		CSRF:      sess.CSRF,
		CreatedAt: s.clock.Now().UTC(),
		ExpiresAt: sess.ExpiresAt.UTC(),
	})
}

// Get reads the live session under id from the store.
func (s *StoreSessions) Get(ctx context.Context, id string) (approvalpage.Session, error) {
	got, err := s.store.GetSession(ctx, id, s.clock.Now().UTC())
	if errors.Is(err, storage.ErrNotFound) {
		return approvalpage.Session{}, approvalpage.ErrSessionNotFound
	}
	if err != nil {
		return approvalpage.Session{}, err
	}
	return approvalpage.Session{Approver: got.Approver, CSRF: got.CSRF, ExpiresAt: got.ExpiresAt}, nil
}

// Delete forgets the session under id in the store, which signs it out
// everywhere.
func (s *StoreSessions) Delete(ctx context.Context, id string) error {
	return s.store.DeleteSession(ctx, id)
}

// systemClock is the real clock, for StoreSessions given none.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
