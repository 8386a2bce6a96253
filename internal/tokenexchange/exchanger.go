package tokenexchange

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// RFC 8693's names on the wire.
const (
	grantType       = "urn:ietf:params:oauth:grant-type:token-exchange"
	accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
)

// Early is how long before its expiry a cached token is exchanged anew:
// a token about to expire could expire on its way to the provider.
const Early = 60 * time.Second

// Config is one provider's exchange: where, for which audience, and as
// which client of the identity provider.
type Config struct {
	// Upstream names the provider in refusals and keys the cache: an
	// upstream MCP server's id or a manifest tool's slug.
	Upstream string
	TokenURL string
	Audience string
	// Scope is asked for as it is (space-separated scopes); "" asks for none.
	Scope string
	// Resource, when set, is sent as RFC 8707's resource.
	Resource     string
	ClientID     string
	ClientSecret string
}

// String keeps the client secret out of anything that prints a Config.
func (c Config) String() string {
	return fmt.Sprintf("tokenexchange.Config{Upstream: %q, TokenURL: %q, Audience: %q}", c.Upstream, c.TokenURL, c.Audience)
}

// GoString keeps it out of %#v too.
func (c Config) GoString() string { return c.String() }

// Error is an exchange the identity provider refused, or that could not
// reach it. It names the provider the token was for, never a token.
type Error struct {
	Upstream string
	// Unreachable: no answer came from the identity provider.
	Unreachable bool
	// Code is the provider's OAuth error code ("invalid_grant"), when it
	// answered with one: a fixed vocabulary, safe to log.
	Code string
}

func (e *Error) Error() string {
	if e.Unreachable {
		return "tokenexchange: the identity provider could not be reached to exchange a token for " + e.Upstream
	}
	if e.Code != "" {
		return "tokenexchange: the identity provider refused to exchange a token for " + e.Upstream + ": " + e.Code
	}
	return "tokenexchange: the identity provider refused to exchange a token for " + e.Upstream
}

// Exchanger exchanges callers' tokens and keeps what it got, per subject
// and provider, until Early before it expires. It is safe for concurrent
// use.
type Exchanger struct {
	// HTTPClient reaches the identity providers; nil means one with a 10 s
	// timeout.
	HTTPClient *http.Client
	// Now is the time tokens expire against; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	cache  map[cacheKey]cached
	styles map[string]oauth2.AuthStyle // by token URL (discovery.go)
	// asking are the exchanges under way: a subject's calls that come at
	// once, before any token is kept, wait for the first one's exchange
	// rather than each asking the provider.
	asking map[cacheKey]*asked
}

// asked is one exchange under way: done closes once token and err are
// set.
type asked struct {
	done  chan struct{}
	token string
	err   error
}

// cacheKey is a subject at one provider. The exchange's own settings are
// part of it, so that a provider configured anew is not sent a token got
// for its old audience.
type cacheKey struct {
	subject, upstream, tokenURL, audience, scope, resource string
}

type cached struct {
	token string
	until time.Time // Early before it expires
}

// maxCached bounds the cache; past it, expired entries are dropped, and if
// none were, everything is: a cache miss costs one exchange.
const maxCached = 10000

// Token returns a token for cfg's provider on behalf of subject, whose
// access token is subjectToken: the cached one while it lasts, else one
// exchanged now. A refusal is an *Error.
func (e *Exchanger) Token(ctx context.Context, cfg Config, subject, subjectToken string) (string, error) {
	k := cacheKey{subject, cfg.Upstream, cfg.TokenURL, cfg.Audience, cfg.Scope, cfg.Resource}
	now := e.now()
	e.mu.Lock()
	if c, ok := e.cache[k]; ok && now.Before(c.until) {
		e.mu.Unlock()
		return c.token, nil
	}
	if a, ok := e.asking[k]; ok {
		e.mu.Unlock()
		select {
		case <-a.done:
			return a.token, a.err
		case <-ctx.Done():
			return "", &Error{Upstream: cfg.Upstream, Unreachable: true}
		}
	}
	a := &asked{done: make(chan struct{})}
	if e.asking == nil {
		e.asking = map[cacheKey]*asked{}
	}
	e.asking[k] = a
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.asking, k)
		e.mu.Unlock()
		close(a.done)
	}()
	tok, err := e.exchange(ctx, cfg, subjectToken)
	if err != nil {
		a.err = err
		return "", err
	}
	a.token = tok.AccessToken
	if !tok.Expiry.IsZero() {
		// A token that does not say when it expires is used once.
		if until := tok.Expiry.Add(-Early); now.Before(until) {
			e.put(k, cached{token: tok.AccessToken, until: until}, now)
		}
	}
	return tok.AccessToken, nil
}

func (e *Exchanger) put(k cacheKey, c cached, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cache == nil {
		e.cache = map[cacheKey]cached{}
	}
	if len(e.cache) >= maxCached {
		for k, c := range e.cache {
			if !now.Before(c.until) {
				delete(e.cache, k)
			}
		}
		if len(e.cache) >= maxCached {
			clear(e.cache)
		}
	}
	e.cache[k] = c
}

// exchange asks the identity provider, the client authenticated as its
// discovery document allows (authStyle).
func (e *Exchanger) exchange(ctx context.Context, cfg Config, subjectToken string) (*oauth2.Token, error) {
	params := url.Values{
		"grant_type":           {grantType},
		"subject_token":        {subjectToken},
		"subject_token_type":   {accessTokenType},
		"requested_token_type": {accessTokenType},
		"audience":             {cfg.Audience},
	}
	if cfg.Resource != "" {
		params.Set("resource", cfg.Resource)
	}
	cc := clientcredentials.Config{
		ClientID:       cfg.ClientID,
		ClientSecret:   cfg.ClientSecret,
		TokenURL:       cfg.TokenURL,
		Scopes:         strings.Fields(cfg.Scope),
		EndpointParams: params,
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, e.client())
	cc.AuthStyle = e.authStyle(ctx, cfg.TokenURL)
	tok, err := cc.Token(ctx)
	if err != nil {
		// Neither the provider's answer nor the request's URL goes on: an
		// answer could repeat what was sent.
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, &Error{Upstream: cfg.Upstream, Code: oauthCode(re.ErrorCode)}
		}
		return nil, &Error{Upstream: cfg.Upstream, Unreachable: true}
	}
	if tok.AccessToken == "" {
		return nil, &Error{Upstream: cfg.Upstream}
	}
	return tok, nil
}

// oauthCode is code when it is shaped as an OAuth error code, else "".
func oauthCode(code string) string {
	if len(code) == 0 || len(code) > 64 {
		return ""
	}
	for _, r := range code {
		if (r < 'a' || r > 'z') && r != '_' {
			return ""
		}
	}
	return code
}

func (e *Exchanger) client() *http.Client {
	if e.HTTPClient != nil {
		return e.HTTPClient
	}
	return defaultClient
}

var defaultClient = &http.Client{Timeout: 10 * time.Second}

func (e *Exchanger) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}
