package tokenexchange

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"

	"golang.org/x/oauth2"
)

// How the client authenticates is the provider's to say: its discovery
// document (OpenID Connect Discovery, or RFC 8414's authorization server
// metadata) lists token_endpoint_auth_methods_supported. Only the token
// URL is configured, so the documents are looked for at its origin, and
// believed only when they name that same token endpoint. Without one,
// client_secret_basic, which RFC 6749 has every provider support.

// wellKnown are the documents looked for, in order.
var wellKnown = []string{"/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"}

// authStyle is how to authenticate at tokenURL, found once per URL.
func (e *Exchanger) authStyle(ctx context.Context, tokenURL string) oauth2.AuthStyle {
	e.mu.Lock()
	style, ok := e.styles[tokenURL]
	e.mu.Unlock()
	if ok {
		return style
	}
	style, settled := e.discover(ctx, tokenURL)
	if settled {
		e.mu.Lock()
		if e.styles == nil {
			e.styles = map[string]oauth2.AuthStyle{}
		}
		e.styles[tokenURL] = style
		e.mu.Unlock()
	}
	return style
}

// discover reads the provider's discovery document; settled is false when
// no answer came, so that it is looked for again next time.
func (e *Exchanger) discover(ctx context.Context, tokenURL string) (style oauth2.AuthStyle, settled bool) {
	u, err := url.Parse(tokenURL)
	if err != nil {
		return oauth2.AuthStyleInHeader, true
	}
	settled = true
	for _, path := range wellKnown {
		doc, answered := e.fetch(ctx, u.Scheme+"://"+u.Host+path)
		if !answered {
			settled = false
			continue
		}
		if doc == nil || doc.TokenEndpoint != tokenURL {
			continue
		}
		methods := doc.AuthMethods
		if len(methods) == 0 || slices.Contains(methods, "client_secret_basic") || !slices.Contains(methods, "client_secret_post") {
			return oauth2.AuthStyleInHeader, true
		}
		return oauth2.AuthStyleInParams, true
	}
	return oauth2.AuthStyleInHeader, settled
}

type discoveryDoc struct {
	TokenEndpoint string   `json:"token_endpoint"`
	AuthMethods   []string `json:"token_endpoint_auth_methods_supported"`
}

// fetch gets a discovery document: nil when there is none there (any
// answer but 200 with JSON), answered false when no answer came.
func (e *Exchanger) fetch(ctx context.Context, at string) (doc *discoveryDoc, answered bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, at, nil)
	if err != nil {
		return nil, true
	}
	resp, err := e.client().Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, true
	}
	var d discoveryDoc
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&d); err != nil {
		return nil, true
	}
	return &d, true
}
