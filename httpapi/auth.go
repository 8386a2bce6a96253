package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Authenticator maps an API key to the principal it belongs to.
type Authenticator interface {
	// Authenticate returns the principal of key, or ok false for any key it
	// does not accept. It must not say why: an unknown key and a revoked
	// one look the same to the caller.
	Authenticate(ctx context.Context, key string) (principal string, ok bool)
}

// KeyStore is an Authenticator over keys held only as SHA-256 digests, so
// a leaked configuration or memory dump does not leak usable keys. Safe for
// concurrent use.
//
// Lookup is O(1): digests are bucketed by their first 8 bytes, and every
// digest in the bucket is compared in full in constant time, without
// stopping at a match. Timing can at most tell an attacker something about
// the digest of the key they sent, which they already know, never about a
// stored key.
type KeyStore struct {
	mu      sync.RWMutex
	buckets map[[8]byte][]storedKey
}

type storedKey struct {
	digest    [sha256.Size]byte
	principal string
}

// NewKeyStore returns an empty KeyStore.
func NewKeyStore() *KeyStore {
	return &KeyStore{buckets: map[[8]byte][]storedKey{}}
}

// ErrKeyTaken is returned when a key (or digest) is added for a second principal.
var ErrKeyTaken = errors.New("httpapi: API key already belongs to another principal")

// AddKey lets key authenticate as principal. Only its digest is kept.
func (s *KeyStore) AddKey(principal, key string) error {
	if key == "" {
		return errors.New("httpapi: empty API key")
	}
	return s.add(principal, sha256.Sum256([]byte(key)))
}

// AddKeyDigest lets the key whose SHA-256 is hexDigest authenticate as
// principal, for keys an operator does not keep in clear.
func (s *KeyStore) AddKeyDigest(principal, hexDigest string) error {
	raw, err := hex.DecodeString(strings.TrimPrefix(strings.ToLower(hexDigest), "sha256:"))
	if err != nil || len(raw) != sha256.Size {
		return fmt.Errorf("httpapi: %q is not a hex SHA-256 digest", hexDigest)
	}
	var d [sha256.Size]byte
	copy(d[:], raw)
	return s.add(principal, d)
}

func bucketOf(d [sha256.Size]byte) [8]byte {
	var b [8]byte
	copy(b[:], d[:8])
	return b
}

func (s *KeyStore) add(principal string, d [sha256.Size]byte) error {
	if principal == "" {
		return errors.New("httpapi: empty principal")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := bucketOf(d)
	for _, k := range s.buckets[b] {
		if k.digest == d {
			if k.principal != principal {
				return ErrKeyTaken
			}
			return nil
		}
	}
	s.buckets[b] = append(s.buckets[b], storedKey{digest: d, principal: principal})
	return nil
}

// Authenticate returns the principal the key belongs to.
func (s *KeyStore) Authenticate(_ context.Context, key string) (string, bool) {
	d := sha256.Sum256([]byte(key))
	s.mu.RLock()
	bucket := s.buckets[bucketOf(d)]
	s.mu.RUnlock()
	principal, found := "", 0
	for _, k := range bucket {
		if subtle.ConstantTimeCompare(k.digest[:], d[:]) == 1 {
			principal, found = k.principal, 1
		}
	}
	return principal, found == 1
}

// bearerToken extracts the key from "Authorization: Bearer <key>". A
// missing, repeated or malformed header yields ok false.
func bearerToken(r *http.Request) (string, bool) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	scheme, token, found := strings.Cut(values[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > 512 || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}
