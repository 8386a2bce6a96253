// Package testidp runs a real OpenID provider (zitadel's op package) on
// loopback for tests: discovery, a key set and a token endpoint over HTTP,
// issuing JWT access tokens to clients by the client credentials grant,
// with keys that can be rotated while it runs; and the authorization code
// flow with PKCE, where people sign in at its login form (authcode.go).
package testidp

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Client is a client of the provider, which gets tokens with its ID and
// Secret by the client credentials grant.
type Client struct {
	ID     string
	Secret string
	// Subject is the sub of its tokens; "" means ID.
	Subject string
	// Audience is the aud of its tokens; "" means the provider's.
	Audience string
	// Scopes are those it may be granted; a token request asking for none
	// gets them all.
	Scopes []string
	// Claims are added to its tokens.
	Claims map[string]any
	// Lifetime is how long its tokens last (default 5 minutes); a negative
	// one issues tokens already expired.
	Lifetime time.Duration
	// NotBefore moves its tokens' nbf (and iat) this far into the future.
	NotBefore time.Duration
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is its issuer URL, http://127.0.0.1:port.
	Issuer string
	// TokenURL is its token endpoint.
	TokenURL string

	audience  string
	srv       *httptest.Server
	store     *store
	keyFetch  atomic.Int64
	discovery atomic.Int64
}

// Start runs a provider whose tokens are for audience until the test ends.
// Its first key is RS256.
func Start(t testing.TB, audience string) *Provider {
	t.Helper()
	return start(t, audience, nil)
}

// StartSharingKeys runs a second provider, at another address and so with
// another issuer, that signs with p's keys: its tokens verify against p's
// key set but name the wrong issuer.
func StartSharingKeys(t testing.TB, p *Provider) *Provider {
	t.Helper()
	return start(t, p.audience, p.store)
}

func start(t testing.TB, audience string, shared *store) *Provider {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{Issuer: "http://" + ln.Addr().String(), audience: audience}
	p.store = shared
	if p.store == nil {
		p.store = &store{clients: map[string]*Client{}}
		p.store.Storage = storage.NewStorage(storage.NewUserStore(p.Issuer))
		p.store.rotate(jose.RS256)
	}
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:      sha256.Sum256([]byte("testidp")),
		CodeMethodS256: true,
		AuthMethodPost: true,
	}, &clientStore{store: p.store, audience: audience}, op.StaticIssuer(p.Issuer),
		op.WithAllowInsecure(), op.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	keysPath := op.DefaultEndpoints.JwksURI.Relative()
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case keysPath:
			p.keyFetch.Add(1)
		case "/.well-known/openid-configuration":
			p.discovery.Add(1)
		case LoginPath:
			p.serveLogin(w, r)
			return
		}
		provider.ServeHTTP(w, r)
	}))
	p.srv.Listener.Close()
	p.srv.Listener = ln
	p.srv.Start()
	t.Cleanup(p.srv.Close)
	p.TokenURL = p.Issuer + op.DefaultEndpoints.Token.Relative()
	return p
}

// KeysURL is the provider's key set (JWKS) URL.
func (p *Provider) KeysURL() string { return p.Issuer + op.DefaultEndpoints.JwksURI.Relative() }

// KeyFetches is how many times its key set was fetched.
func (p *Provider) KeyFetches() int64 { return p.keyFetch.Load() }

// Discoveries is how many times its discovery document was fetched.
func (p *Provider) Discoveries() int64 { return p.discovery.Load() }

// AddClient registers c.
func (p *Provider) AddClient(c Client) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	cc := c
	p.store.clients[c.ID] = &cc
}

// Rotate makes a new key of alg (RS256, ES256 or EdDSA) the signing key,
// published beside the old ones, as providers rotate. It returns its kid.
func (p *Provider) Rotate(alg jose.SignatureAlgorithm) string { return p.store.rotate(alg) }

// Retire stops publishing every key but the signing key.
func (p *Provider) Retire() {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.keys = p.store.keys[len(p.store.keys)-1:]
}

// SigningKey is the current signing key, private half included, for
// tests that forge tokens the provider would not issue.
func (p *Provider) SigningKey() jose.JSONWebKey {
	k := p.store.signing()
	return jose.JSONWebKey{Key: k.key, KeyID: k.id, Algorithm: string(k.alg), Use: "sig"}
}

// Token gets a token for the client by the client credentials grant over
// HTTP, asking for scopes (none: all the client may have).
func (p *Provider) Token(t testing.TB, clientID string, scopes ...string) string {
	t.Helper()
	p.store.mu.Lock()
	c, ok := p.store.clients[clientID]
	p.store.mu.Unlock()
	if !ok {
		t.Fatalf("testidp: no client %q", clientID)
	}
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	req, err := http.NewRequest(http.MethodPost, p.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("testidp: token request: %s: %s", resp.Status, body)
	}
	var out struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.AccessToken == "" {
		t.Fatalf("testidp: token response %s: %v", body, err)
	}
	return out.AccessToken
}

// key is one signing key.
type key struct {
	id  string
	alg jose.SignatureAlgorithm
	key any // the private key
}

func (k *key) SignatureAlgorithm() jose.SignatureAlgorithm { return k.alg }
func (k *key) Key() any                                    { return k.key }
func (k *key) ID() string                                  { return k.id }

// publicKey is a key as the key set publishes it.
type publicKey struct{ k *key }

func (k publicKey) ID() string                         { return k.k.id }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return k.k.alg }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any {
	switch priv := k.k.key.(type) {
	case *rsa.PrivateKey:
		return &priv.PublicKey
	case *ecdsa.PrivateKey:
		return &priv.PublicKey
	case ed25519.PrivateKey:
		return priv.Public()
	}
	return nil
}

// store is the provider's state: the example storage of zitadel's op
// package for everything a client credentials grant does not touch, and
// the keys and clients of this provider.
type store struct {
	*storage.Storage
	mu      sync.Mutex
	keys    []*key // the last signs
	clients map[string]*Client

	codeFlowOnce sync.Once
	flow         *codeFlow // the authorization code flow's (authcode.go)
	// exchanges is the token exchange grant's state (exchange.go).
	exchanges exchanges
}

func (s *store) rotate(alg jose.SignatureAlgorithm) string {
	k := &key{id: uuid.NewString(), alg: alg}
	switch alg {
	case jose.RS256:
		k.key, _ = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		k.key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.EdDSA:
		_, k.key, _ = ed25519.GenerateKey(rand.Reader)
	default:
		panic("testidp: no key for " + alg)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, k)
	return k.id
}

func (s *store) signing() *key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1]
}

// clientStore is the op.Storage of one provider: a store, and the
// audience its tokens are for.
type clientStore struct {
	*store
	audience string
}

var (
	_ op.Storage                  = (*clientStore)(nil)
	_ op.ClientCredentialsStorage = (*clientStore)(nil)
)

func (s *clientStore) SigningKey(context.Context) (op.SigningKey, error) { return s.signing(), nil }

func (s *clientStore) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []jose.SignatureAlgorithm
	seen := map[jose.SignatureAlgorithm]bool{}
	for _, k := range s.keys {
		if !seen[k.alg] {
			seen[k.alg] = true
			out = append(out, k.alg)
		}
	}
	return out, nil
}

func (s *clientStore) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		out[i] = publicKey{k}
	}
	return out, nil
}

func (s *clientStore) client(id string) (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, errors.New("no such client")
	}
	return c, nil
}

func (s *clientStore) ClientCredentials(_ context.Context, clientID, clientSecret string) (op.Client, error) {
	c, err := s.client(clientID)
	if err != nil || c.Secret != clientSecret {
		return nil, errors.New("wrong client id or secret")
	}
	return &opClient{c: c}, nil
}

func (s *clientStore) ClientCredentialsTokenRequest(_ context.Context, clientID string, scopes []string) (op.TokenRequest, error) {
	c, err := s.client(clientID)
	if err != nil {
		return nil, err
	}
	granted := c.Scopes
	if len(scopes) > 0 {
		granted = nil
		for _, sc := range scopes {
			for _, allowed := range c.Scopes {
				if sc == allowed {
					granted = append(granted, sc)
				}
			}
		}
	}
	sub, aud := c.Subject, c.Audience
	if sub == "" {
		sub = c.ID
	}
	if aud == "" {
		aud = s.audience
	}
	return &tokenRequest{JWTTokenRequest: oidc.JWTTokenRequest{Subject: sub, Audience: []string{aud}, Scopes: granted}, client: c}, nil
}

// tokenRequest is a client credentials grant's token request.
type tokenRequest struct {
	oidc.JWTTokenRequest
	client *Client
}

func (r *tokenRequest) GetSubject() string    { return r.Subject }
func (r *tokenRequest) GetAudience() []string { return r.Audience }
func (r *tokenRequest) GetScopes() []string   { return r.Scopes }

func (s *clientStore) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	lifetime := 5 * time.Minute
	if r, ok := req.(*tokenRequest); ok && r.client.Lifetime != 0 {
		lifetime = r.client.Lifetime
	}
	return uuid.NewString(), time.Now().Add(lifetime), nil
}

func (s *clientStore) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, scopes []string) (map[string]any, error) {
	claims := map[string]any{}
	if r, ok := req.(*tokenRequest); ok {
		for k, v := range r.client.Claims {
			claims[k] = v
		}
	}
	if len(req.GetScopes()) > 0 {
		claims["scope"] = strings.Join(req.GetScopes(), " ")
	}
	_ = scopes
	return claims, nil
}

// opClient is a Client as zitadel's op package sees it: confidential, the
// client credentials grant only, JWT access tokens.
type opClient struct{ c *Client }

var _ op.Client = (*opClient)(nil)

func (c *opClient) GetID() string                       { return c.c.ID }
func (c *opClient) RedirectURIs() []string              { return nil }
func (c *opClient) PostLogoutRedirectURIs() []string    { return nil }
func (c *opClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *opClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *opClient) ResponseTypes() []oidc.ResponseType  { return nil }
func (c *opClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials, oidc.GrantTypeTokenExchange}
}
func (c *opClient) LoginURL(string) string               { return "" }
func (c *opClient) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *opClient) IDTokenLifetime() time.Duration       { return time.Hour }
func (c *opClient) DevMode() bool                        { return false }
func (c *opClient) IsScopeAllowed(string) bool           { return true }
func (c *opClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c *opClient) ClockSkew() time.Duration             { return -c.c.NotBefore }
func (c *opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

// String names the provider in test output.
func (p *Provider) String() string { return fmt.Sprintf("testidp at %s", p.Issuer) }
