package httpapi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"

	"github.com/toolgate/toolgate"
)

// Sessions of the approval page (contract section 14). A person signs in
// with an approver key, once, in a POST form; the page then knows them by
// a session cookie for sessionTTL, never by the key again.
//
// Sessions live in this process's memory: they are few (one per person
// signed in), short, and losing them costs a person one sign-in. With
// several instances behind a load balancer, a session is known only to the
// instance that signed it in, so a person may be asked to sign in again
// when a request lands on another one; sticky sessions avoid that. Nothing
// a session decides depends on it being found: an unknown cookie is the
// sign-in form, and every decision is the gateway's, made in the store.
const (
	sessionTTL    = 15 * time.Minute
	sessionCookie = "toolgate_approver_session"
	// maxSessions bounds the memory sessions take. Past it, expired
	// sessions are dropped, then any one: only an approver can sign in.
	maxSessions = 10_000
)

// session is one signed-in approver.
type session struct {
	approver string
	// csrf is the token every form of this session carries, so that a
	// form posted from anywhere else, which cannot read it, is refused.
	csrf    string
	expires time.Time
}

// sessions holds the signed-in approvers by the SHA-256 of their session
// token: a memory dump reveals no token a browser could present.
type sessions struct {
	clock toolgate.Clock
	mu    sync.Mutex
	all   map[[sha256.Size]byte]session
}

func newSessions(clock toolgate.Clock) *sessions {
	return &sessions{clock: clock, all: map[[sha256.Size]byte]session{}}
}

// randomToken is 32 bytes from the system's secure source, as base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// start signs approver in and returns the session's token.
func (s *sessions) start(approver string) (string, session) {
	token := randomToken()
	now := s.clock.Now()
	sess := session{approver: approver, csrf: randomToken(), expires: now.Add(sessionTTL)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) >= maxSessions {
		for k, v := range s.all {
			if !now.Before(v.expires) {
				delete(s.all, k)
			}
		}
	}
	for k := range s.all {
		if len(s.all) < maxSessions {
			break
		}
		delete(s.all, k)
	}
	s.all[sha256.Sum256([]byte(token))] = sess
	return token, sess
}

// find returns the live session of token.
func (s *sessions) find(token string) (session, bool) {
	if token == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.all[k]
	if ok && !s.clock.Now().Before(sess.expires) {
		delete(s.all, k)
		return session{}, false
	}
	return sess, ok
}

// end signs a session out.
func (s *sessions) end(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.all, sha256.Sum256([]byte(token)))
}

// validCSRF reports whether a form's token is its session's, compared in
// constant time.
func (sess session) validCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(sess.csrf)) == 1
}
