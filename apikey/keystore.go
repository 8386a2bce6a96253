package apikey

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// KeyStore is an Authenticator and an ApproverAuthenticator over keys held
// only as SHA-256 digests, so a leaked configuration or memory dump does
// not leak usable keys. A key is a caller key or an approver key, never
// both: Authenticate accepts only caller keys, AuthenticateApprover only
// approver keys, and adding a key as the other kind fails. Safe for
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
	digest [sha256.Size]byte
	owner  string // the principal, or the approver
	kind   keyKind
}

// keyKind tells caller keys from approver keys.
type keyKind uint8

const (
	callerKey keyKind = iota + 1
	approverKey
)

// Interface guards.
var (
	_ Authenticator         = (*KeyStore)(nil)
	_ ApproverAuthenticator = (*KeyStore)(nil)
)

// NewKeyStore returns an empty KeyStore.
func NewKeyStore() *KeyStore {
	return &KeyStore{buckets: map[[8]byte][]storedKey{}}
}

// ErrKeyTaken is returned when a key (or digest) is added for a second
// principal or approver, or as an approver key when it is a caller key, or
// the other way round.
var ErrKeyTaken = errors.New("apikey: API key already belongs to another principal")

// AddKey lets key authenticate as principal. Only its digest is kept.
func (s *KeyStore) AddKey(principal, key string) error {
	return s.addKey(principal, key, callerKey)
}

// AddKeyDigest lets the key whose SHA-256 is hexDigest authenticate as
// principal, for keys an operator does not keep in clear.
func (s *KeyStore) AddKeyDigest(principal, hexDigest string) error {
	return s.addDigest(principal, hexDigest, callerKey)
}

// AddApproverKey lets key authenticate as approver, a person who decides
// approval requests. Only its digest is kept.
func (s *KeyStore) AddApproverKey(approver, key string) error {
	return s.addKey(approver, key, approverKey)
}

// AddApproverKeyDigest lets the key whose SHA-256 is hexDigest
// authenticate as approver.
func (s *KeyStore) AddApproverKeyDigest(approver, hexDigest string) error {
	return s.addDigest(approver, hexDigest, approverKey)
}

func (s *KeyStore) addKey(owner, key string, kind keyKind) error {
	if key == "" {
		return errors.New("apikey: empty API key")
	}
	return s.add(owner, sha256.Sum256([]byte(key)), kind)
}

func (s *KeyStore) addDigest(owner, hexDigest string, kind keyKind) error {
	raw, err := hex.DecodeString(strings.TrimPrefix(strings.ToLower(hexDigest), "sha256:"))
	if err != nil || len(raw) != sha256.Size {
		return fmt.Errorf("apikey: %q is not a hex SHA-256 digest", hexDigest)
	}
	var d [sha256.Size]byte
	copy(d[:], raw)
	return s.add(owner, d, kind)
}

func bucketOf(d [sha256.Size]byte) [8]byte {
	var b [8]byte
	copy(b[:], d[:8])
	return b
}

func (s *KeyStore) add(owner string, d [sha256.Size]byte, kind keyKind) error {
	if owner == "" {
		return errors.New("apikey: empty principal")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := bucketOf(d)
	for _, k := range s.buckets[b] {
		if k.digest == d {
			if k.owner != owner || k.kind != kind {
				return ErrKeyTaken
			}
			return nil
		}
	}
	s.buckets[b] = append(s.buckets[b], storedKey{digest: d, owner: owner, kind: kind})
	return nil
}

// Authenticate returns the principal a caller key belongs to. An approver
// key is not accepted.
func (s *KeyStore) Authenticate(_ context.Context, key string) (string, bool) {
	return s.lookup(key, callerKey)
}

// AuthenticateApprover returns the approver an approver key belongs to. A
// caller key is not accepted.
func (s *KeyStore) AuthenticateApprover(_ context.Context, key string) (string, bool) {
	return s.lookup(key, approverKey)
}

// lookup finds the owner of a key of kind. Every digest in the key's
// bucket is compared in full, in constant time, whatever its kind.
func (s *KeyStore) lookup(key string, kind keyKind) (string, bool) {
	d := sha256.Sum256([]byte(key))
	s.mu.RLock()
	bucket := s.buckets[bucketOf(d)]
	s.mu.RUnlock()
	owner, found := "", 0
	for _, k := range bucket {
		match := subtle.ConstantTimeCompare(k.digest[:], d[:]) & subtle.ConstantTimeByteEq(uint8(k.kind), uint8(kind))
		if match == 1 {
			owner, found = k.owner, 1
		}
	}
	return owner, found == 1
}
