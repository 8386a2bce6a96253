// Package devidp is a loopback OpenID provider for trying toolgate with
// access tokens in minutes: users, their groups and clients come from a
// small JSON file (Users), and zitadel's op package speaks the protocol:
// discovery, the key set, the client credentials grant, the authorization
// code grant with PKCE behind a minimal login page, and token exchange
// (RFC 8693). It keeps everything in memory and signs with a key made at
// start unless given one. It is a development tool: anyone who reaches it
// signs in as anyone in the file, which is why cmd/toolgate-dev-idp
// listens on loopback only.
package devidp

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// DefaultTokenLifetime is how long tokens last when Config says nothing:
// a working day, so the tokens printed at start outlast the trying.
const DefaultTokenLifetime = 8 * time.Hour

// Config is the provider's optional settings.
type Config struct {
	// Key signs the tokens (an RSA, ECDSA P-256 or Ed25519 private key);
	// nil makes an RSA key at start, so tokens do not outlive the process.
	Key crypto.Signer
	// TokenLifetime is how long access and ID tokens last;
	// 0 is DefaultTokenLifetime.
	TokenLifetime time.Duration
	// Logger receives op's own log lines; nil discards them.
	Logger *slog.Logger
}

// Provider is the OpenID provider, an http.Handler serving at its issuer.
type Provider struct {
	issuer  string
	users   *Users
	store   *storage
	handler http.Handler
}

// New makes a provider whose issuer is issuer (http://127.0.0.1:port,
// where it is served) for the users of u.
func New(issuer string, u *Users, cfg *Config) (*Provider, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.TokenLifetime == 0 {
		c.TokenLifetime = DefaultTokenLifetime
	}
	if c.TokenLifetime < 0 {
		return nil, errors.New("devidp: a negative token lifetime")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if iu, err := url.Parse(issuer); err != nil || iu.Scheme != "http" && iu.Scheme != "https" || iu.Host == "" || iu.Path != "" {
		return nil, fmt.Errorf("devidp: issuer %q is not an http(s) URL with no path", issuer)
	}
	if c.Key == nil {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return nil, err
		}
		c.Key = k
	}
	sk, err := newSigningKey(c.Key)
	if err != nil {
		return nil, err
	}
	var cryptoKey [32]byte // op encrypts opaque tokens with it; ours are JWTs
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		return nil, err
	}
	p := &Provider{issuer: issuer, users: u}
	p.store = newStorage(u, sk, c.TokenLifetime)
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:      cryptoKey,
		CodeMethodS256: true,
		AuthMethodPost: true,
	}, p.store, op.StaticIssuer(issuer), op.WithAllowInsecure(), op.WithLogger(c.Logger))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	login := &loginPage{store: p.store, callback: op.AuthCallbackURL(provider)}
	mux.Handle(loginPath, op.NewIssuerInterceptor(provider.IssuerFromRequest).Handler(login))
	mux.Handle("/", provider)
	p.handler = mux
	return p, nil
}

// ServeHTTP serves the provider: its discovery document at
// /.well-known/openid-configuration names every other endpoint.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.handler.ServeHTTP(w, r) }

// Issuer is the provider's issuer URL.
func (p *Provider) Issuer() string { return p.issuer }

// TokenURL is its token endpoint.
func (p *Provider) TokenURL() string { return p.issuer + op.DefaultEndpoints.Token.Relative() }

// Token is an access token ready to use.
type Token struct {
	Subject     string // the user or client it is for
	Var         string // a shell variable to keep it in: ANN_TOKEN
	AccessToken string
	Expires     time.Time
}

// Tokens issues one access token per user and per service (a client with
// a secret and no redirect URIs, which gets tokens for itself), for the
// file's audience with all the scopes each may have, as the grants would:
// a reader pastes them rather than signs in.
func (p *Provider) Tokens(ctx context.Context) ([]Token, error) {
	var ids []string
	for _, us := range p.users.Users {
		ids = append(ids, us.ID)
	}
	for _, c := range p.users.Clients {
		if c.Secret != "" && len(c.RedirectURIs) == 0 {
			ids = append(ids, c.ID)
		}
	}
	out := make([]Token, 0, len(ids))
	for _, id := range ids {
		s := p.store.subjects[id]
		req := &tokenRequest{subject: id, audience: []string{p.users.Audience}, scopes: s.scopes}
		exp := time.Now().Add(p.store.lifetime)
		tok, err := op.CreateJWT(ctx, p.issuer, req, exp, uuid.NewString(), printedClient{}, p.store)
		if err != nil {
			return nil, err
		}
		out = append(out, Token{Subject: id, Var: shellVar(id), AccessToken: tok, Expires: exp})
	}
	return out, nil
}

var notVarChar = regexp.MustCompile(`[^A-Z0-9]+`)

// shellVar is the variable a subject's token is printed in: its id in
// capitals, each run of other characters one underscore, then _TOKEN.
func shellVar(id string) string {
	v := strings.Trim(notVarChar.ReplaceAllString(strings.ToUpper(id), "_"), "_")
	if v == "" || v[0] >= '0' && v[0] <= '9' {
		v = "U_" + v
	}
	return v + "_TOKEN"
}

// printedClient is the client the printed tokens name as their
// client_id: the provider itself.
type printedClient struct{}

func (printedClient) GetID() string            { return "toolgate-dev-idp" }
func (printedClient) ClockSkew() time.Duration { return 0 }
func (printedClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (printedClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
