package approvalpage

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/internal/httpx"
)

// A person signs in with an approver key, once, in a POST form; the pages
// then know them by a session cookie for sessionTTL, never by the key
// again. Nothing a session decides depends on it being found: an unknown
// cookie is the sign-in form, and every decision is the gateway's, made in
// the store.
const (
	sessionTTL    = 15 * time.Minute
	sessionCookie = "toolgate_approver_session"
)

// Session is one approver signed in on the approval pages.
type Session struct {
	// Approver is who signed in.
	Approver string
	// CSRF is the token every form of the session carries, so that a form
	// posted from anywhere else, which cannot read it, is refused.
	CSRF string
	// ExpiresAt is when the session ends, 15 minutes after sign-in.
	ExpiresAt time.Time
}

// SessionStore keeps the sessions of signed-in approvers. The pages name a
// session by the SHA-256 of its token, in hex, and never hand a store the
// token itself: neither a memory dump nor a database then holds a cookie a
// browser could present. A store shared by several instances lets a person
// sign in on one, decide on another and sign out of all. Implementations
// must be safe for concurrent use.
type SessionStore interface {
	// Create keeps s under id until s.ExpiresAt.
	Create(ctx context.Context, id string, s Session) error
	// Get returns the session kept under id, or ErrSessionNotFound. A store
	// may forget a session once it has expired, or return it: the pages
	// refuse a session past its ExpiresAt either way.
	Get(ctx context.Context, id string) (Session, error)
	// Delete forgets the session under id, which signs it out. Deleting a
	// session that is not kept is no error.
	Delete(ctx context.Context, id string) error
}

// ErrSessionNotFound is returned by SessionStore.Get for a session it does
// not keep.
var ErrSessionNotFound = errors.New("approvalpage: no such session")

// randomToken is 32 bytes from the system's secure source, as base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sessionID is the name a store knows the session of token by.
func sessionID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// startSession signs approver in and returns the session's token.
func (h *Handler) startSession(ctx context.Context, approver string) (string, error) {
	token := randomToken()
	s := Session{Approver: approver, CSRF: randomToken(), ExpiresAt: h.clock.Now().Add(sessionTTL)}
	if err := h.sessions.Create(ctx, sessionID(token), s); err != nil {
		return "", err
	}
	return token, nil
}

// pageSession is the live session of the request's cookie. A store that
// fails is logged, and the request treated as signed out: it can then
// only sign in, which reports the failure.
func (h *Handler) pageSession(r *http.Request) (Session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return Session{}, false
	}
	s, err := h.sessions.Get(r.Context(), sessionID(c.Value))
	if err != nil {
		if !errors.Is(err, ErrSessionNotFound) {
			h.logError(r, err)
		}
		return Session{}, false
	}
	// A session names its approver; what names none is a record the
	// pages keep beside sessions (a spent sign-in), never one.
	if !h.clock.Now().Before(s.ExpiresAt) || s.Approver == "" {
		return Session{}, false
	}
	return s, true
}

// endSession signs out the session of the request's cookie.
func (h *Handler) endSession(r *http.Request) error {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	return h.sessions.Delete(r.Context(), sessionID(c.Value))
}

// validCSRF reports whether a form's token is its session's, compared in
// constant time.
func (s Session) validCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRF)) == 1
}

// sessionCookieFor is the session cookie: HttpOnly, SameSite=Strict,
// Secure when the request came over TLS (or a proxy says it did), and
// scoped to the approval pages. maxAge -1 deletes it.
func sessionCookieFor(r *http.Request, token string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     sessionCookie,
		Value:    token,
		Path:     httpx.Prefix(r) + httpx.ApprovalPagesPath,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   httpx.Scheme(r) == "https",
		SameSite: http.SameSiteStrictMode,
	}
}
