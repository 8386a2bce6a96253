package storage

import (
	"context"
	"time"
)

// SessionStore is the part of Store that keeps the sign-in sessions of the
// approval pages, so that every process sharing the store knows them: a
// person signs in through one instance and decides through another, and a
// sign-out through any ends the session everywhere at once. A store no
// other process shares (the memory store) keeps them for its own.
//
// A session is named by the SHA-256 of its token, never by the token: the
// store then never holds what a browser presents, and a copy of it signs
// no one in.
type SessionStore interface {
	// CreateSession keeps s until s.ExpiresAt. ErrAlreadyExists when a
	// session of that ID is kept. It may also forget sessions that expired
	// before s.CreatedAt, so that the store does not grow with sign-ins.
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns the session kept under id, as it was created.
	// ErrNotFound when none is, or when it expired at or before now. A
	// session deleted by any process is not found by the next read of any
	// other: reads are never answered from memory.
	GetSession(ctx context.Context, id string, now time.Time) (Session, error)
	// DeleteSession forgets the session under id, which signs it out.
	// Deleting a session that is not kept is no error.
	DeleteSession(ctx context.Context, id string) error
}

// Session is one person signed in on the approval pages.
type Session struct {
	// ID is the lowercase hex SHA-256 of the session's token.
	ID string
	// Approver is the approver who signed in.
	Approver string
	// CSRF is the token the session's forms carry. It proves a form came
	// from the session's own pages; without the session's cookie it
	// grants nothing.
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}
