package mcpupstream

import (
	"net/http"
	"net/url"

	"github.com/toolgate/toolgate/internal/tokenexchange"
	"github.com/toolgate/toolgate/registry"
)

// TokenExchange has a URL server learn who calls its tools: for each call,
// the caller's access token is exchanged at TokenURL (RFC 8693) for a token
// whose audience is Audience, sent as the call's bearer token. Callers
// that came with an API key are refused, unless the server also has a
// Credential: they are sent that, as before. The server's own requests
// (the handshake, listing its tools) carry the Credential, or nothing.
type TokenExchange struct {
	TokenURL string
	Audience string
	// Scope is asked for as written (space-separated); "" asks for none.
	Scope string
	// Resource, when set, is sent as the exchange's resource (RFC 8707).
	Resource     string
	ClientID     string
	ClientSecret Value
}

// validTokenExchange checks s's TokenExchange, naming the field at fault.
func validTokenExchange(s *Server, bad func(field, format string, args ...any) error) error {
	te := s.TokenExchange
	if te == nil {
		return nil
	}
	switch {
	case s.URL == "":
		return bad("auth.tokenExchange", "applies only to a url: a command's server has no caller to be told of")
	case te.TokenURL == "":
		return bad("auth.tokenExchange.tokenUrl", "is required")
	case te.Audience == "":
		return bad("auth.tokenExchange.audience", "is required")
	}
	if u, err := url.Parse(te.TokenURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return bad("auth.tokenExchange.tokenUrl", "must be an http or https URL with a host, and no credentials")
	}
	return nil
}

// exchangeOf is s's TokenExchange as its tools carry it, its client secret
// read now; nil when s has none.
func (s *server) exchangeOf() (*registry.TokenExchange, []string, error) {
	te := s.cfg.TokenExchange
	if te == nil {
		return nil, nil, nil
	}
	secret, _, err := s.resolve(te.ClientSecret, "auth.tokenExchange.clientSecret")
	if err != nil {
		return nil, nil, err
	}
	var secrets []string
	if secret != "" {
		secrets = append(secrets, secret)
	}
	return &registry.TokenExchange{
		Upstream:     s.cfg.ID,
		TokenURL:     te.TokenURL,
		Audience:     te.Audience,
		Scope:        te.Scope,
		Resource:     te.Resource,
		ClientID:     te.ClientID,
		ClientSecret: secret,
		KeyCallers:   s.cfg.Credential != nil,
	}, secrets, nil
}

// callerTransport sends a call's exchanged token, when its context has
// one, as the request's bearer token in place of the credential, which
// every other request carries (next, when the server has one). It sits
// before the origin guard, as headerTransport does.
type callerTransport struct {
	withCredential, next http.RoundTripper
}

func (t callerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, ok := tokenexchange.UpstreamToken(req.Context())
	if !ok {
		return t.withCredential.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.next.RoundTrip(r)
}
