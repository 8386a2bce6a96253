package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// Algorithms are the only signature algorithms a token may use. Anything
// else, "none" and the HMAC algorithms among them, is refused before any
// key is looked at, so a public key can never be used as an HMAC secret.
var Algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

// minRSABits is the smallest RSA key accepted from a key set.
const minRSABits = 2048

// maxKeyAge is how long fetched keys are used before the next token
// verified also asks the provider for its current ones (still at most
// once a minute), so that a key the provider withdrew stops being trusted
// even when no token names a new one.
const maxKeyAge = time.Hour

// errNoKeys is a key set that could not be fetched at all: the verifier's
// failure, not the token's.
var errNoKeys = errors.New("oauth: the identity provider's keys could not be fetched")

// keys is one fetched key set.
type keys struct {
	byKID   map[string][]jose.JSONWebKey
	all     []jose.JSONWebKey
	fetched time.Time
}

// keySet holds the identity provider's signing keys and fetches them when
// a token names a key it does not hold, or when they are older than an
// hour, never more than once a minute. It is the oidc.KeySet the
// verifier checks signatures with; go-jose does the cryptography.
type keySet struct {
	issuer    string
	client    *http.Client
	clock     Clock
	log       *slog.Logger
	onRefresh func() // told when the keys change

	current atomic.Pointer[keys]

	mu        sync.Mutex // one fetch at a time; guards the fields below
	jwksURL   string     // configured, or discovered
	discover  bool       // jwksURL comes from discovery
	lastFetch time.Time  // the last attempt, successful or not
}

var _ oidc.KeySet = (*keySet)(nil)

// VerifySignature returns the payload of jwt when a key of the provider
// signed it with an allowed algorithm.
func (s *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSigned(jwt, Algorithms)
	if err != nil {
		return nil, fmt.Errorf("malformed or disallowed: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("not exactly one signature")
	}
	header := jws.Signatures[0].Header
	cur := s.current.Load()
	switch {
	case cur == nil:
		if err := s.refresh(ctx, nil, true); err != nil {
			return nil, err
		}
		cur = s.current.Load()
	case s.clock.Now().Sub(cur.fetched) > maxKeyAge:
		// Old keys still verify while one request fetches new ones, and
		// if the fetch fails.
		_ = s.refresh(ctx, cur, false)
		cur = s.current.Load()
	}
	if payload, known := verifyWith(cur, jws, header); payload != nil {
		return payload, nil
	} else if known {
		// The key is known and did not verify: a forged or altered token,
		// which no fetch can make valid.
		return nil, errors.New("signature does not verify")
	}
	// A key the provider may have added since the keys were fetched.
	if err := s.refresh(ctx, cur, true); err != nil {
		return nil, fmt.Errorf("unknown key %q: %w", header.KeyID, err)
	}
	if payload, _ := verifyWith(s.current.Load(), jws, header); payload != nil {
		return payload, nil
	}
	return nil, fmt.Errorf("unknown key %q: the identity provider does not publish it", header.KeyID)
}

// verifyWith tries the keys the token's header designates: those with its
// kid, or every key when it names none. known says whether any key was
// designated at all.
func verifyWith(k *keys, jws *jose.JSONWebSignature, header jose.Header) (payload []byte, known bool) {
	if k == nil {
		return nil, false
	}
	candidates := k.all
	if header.KeyID != "" {
		candidates = k.byKID[header.KeyID]
	}
	for i := range candidates {
		key := &candidates[i]
		if key.Algorithm != "" && key.Algorithm != header.Algorithm {
			continue
		}
		known = true
		if p, err := jws.Verify(key); err == nil {
			return p, true
		}
	}
	return nil, known
}

// errTooSoon is a fetch refused because the last one was under a minute
// ago.
var errTooSoon = errors.New("the keys were fetched less than a minute ago")

// refresh fetches the keys, unless another caller did since seen was
// loaded, or the last attempt was under a minute ago. Without wait, it
// gives up at once when another fetch is under way.
func (s *keySet) refresh(ctx context.Context, seen *keys, wait bool) error {
	if wait {
		s.mu.Lock()
	} else if !s.mu.TryLock() {
		return nil
	}
	defer s.mu.Unlock()
	if cur := s.current.Load(); cur != seen {
		return nil // someone else fetched meanwhile
	}
	now := s.clock.Now()
	if !s.lastFetch.IsZero() && now.Sub(s.lastFetch) < MinRefreshInterval {
		if seen == nil {
			return errNoKeys
		}
		return errTooSoon
	}
	s.lastFetch = now
	k, err := s.fetch(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "cannot fetch the identity provider's signing keys", "issuer", s.issuer, "error", err)
		if seen == nil {
			return fmt.Errorf("%w: %v", errNoKeys, err)
		}
		return err
	}
	k.fetched = now
	s.current.Store(k)
	if s.onRefresh != nil {
		s.onRefresh()
	}
	return nil
}

// fetch reads the key set, discovering its URL first when needed.
func (s *keySet) fetch(ctx context.Context) (*keys, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	if s.jwksURL == "" {
		u, err := s.discoverJWKS(ctx)
		if err != nil {
			return nil, err
		}
		s.jwksURL = u
	}
	k, err := s.fetchKeys(ctx)
	if err != nil && s.discover {
		s.jwksURL = "" // discover again next time: the provider may have moved its keys
	}
	return k, err
}

// discoverJWKS reads jwks_uri from the issuer's OpenID discovery document,
// which must name the same issuer.
func (s *keySet) discoverJWKS(ctx context.Context) (string, error) {
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.client), s.issuer)
	if err != nil {
		return "", fmt.Errorf("discovery: %w", err)
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.Claims(&doc); err != nil {
		return "", fmt.Errorf("discovery: %w", err)
	}
	if err := checkURL(doc.JWKSURI); err != nil {
		return "", fmt.Errorf("discovery: jwks_uri %w", err)
	}
	return doc.JWKSURI, nil
}

// fetchKeys reads the key set at s.jwksURL, keeping the public signing
// keys of the allowed algorithms and skipping any other.
func (s *keySet) fetchKeys(ctx context.Context) (*keys, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.jwksURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", s.jwksURL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxDocumentBytes {
		return nil, fmt.Errorf("GET %s: the key set is larger than %d bytes", s.jwksURL, maxDocumentBytes)
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("GET %s: not a JSON Web Key Set: %w", s.jwksURL, err)
	}
	k := &keys{byKID: map[string][]jose.JSONWebKey{}}
	for _, r := range raw.Keys {
		var jwk jose.JSONWebKey
		if err := json.Unmarshal(r, &jwk); err != nil {
			continue // a key type go-jose does not know; RFC 7517 says skip it
		}
		if pub, ok := signingKey(jwk); ok {
			k.all = append(k.all, pub)
			k.byKID[pub.KeyID] = append(k.byKID[pub.KeyID], pub)
		}
	}
	if len(k.all) == 0 {
		return nil, fmt.Errorf("GET %s: no RS256, ES256 or EdDSA signing key", s.jwksURL)
	}
	return k, nil
}

// signingKey is jwk's public half when it can verify an allowed algorithm:
// an RSA key of 2048 bits or more, a P-256 key or an Ed25519 key, meant
// for signatures.
func signingKey(jwk jose.JSONWebKey) (jose.JSONWebKey, bool) {
	if jwk.Use != "" && jwk.Use != "sig" {
		return jose.JSONWebKey{}, false
	}
	pub := jwk.Public()
	switch key := pub.Key.(type) {
	case *rsa.PublicKey:
		if key.N.BitLen() < minRSABits || (jwk.Algorithm != "" && jwk.Algorithm != string(jose.RS256)) {
			return jose.JSONWebKey{}, false
		}
	case *ecdsa.PublicKey:
		if key.Curve != elliptic.P256() || (jwk.Algorithm != "" && jwk.Algorithm != string(jose.ES256)) {
			return jose.JSONWebKey{}, false
		}
	case ed25519.PublicKey:
		if jwk.Algorithm != "" && jwk.Algorithm != string(jose.EdDSA) {
			return jose.JSONWebKey{}, false
		}
	default:
		return jose.JSONWebKey{}, false
	}
	return pub, pub.Valid()
}
