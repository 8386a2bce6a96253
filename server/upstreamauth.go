package server

import (
	"net/url"

	"github.com/toolgate/toolgate/mcpupstream"
)

// upstreamAuthJSON is an upstream MCP server's "auth": how it learns who
// calls its tools.
type upstreamAuthJSON struct {
	TokenExchange *tokenExchangeJSON `json:"tokenExchange"`
}

// tokenExchangeJSON is "auth"'s "tokenExchange" (RFC 8693): the caller's
// access token exchanged, per call, for one whose audience is the server.
type tokenExchangeJSON struct {
	TokenURL     *string   `json:"tokenUrl"`
	Audience     *string   `json:"audience"`
	Scope        *string   `json:"scope"`
	Resource     *string   `json:"resource"`
	ClientID     *string   `json:"clientId"`
	ClientSecret *mcpValue `json:"clientSecret"`
}

func (in *upstreamAuthJSON) tokenExchange(path string) (*mcpupstream.TokenExchange, error) {
	te := in.TokenExchange
	path = at(path, "tokenExchange")
	if te == nil {
		return nil, errorf(path, "is required in auth")
	}
	out := &mcpupstream.TokenExchange{}
	for _, f := range []struct {
		name string
		in   *string
		out  *string
	}{
		{"tokenUrl", te.TokenURL, &out.TokenURL},
		{"audience", te.Audience, &out.Audience},
		{"scope", te.Scope, &out.Scope},
		{"resource", te.Resource, &out.Resource},
		{"clientId", te.ClientID, &out.ClientID},
	} {
		if f.in != nil {
			*f.out = *f.in
		}
	}
	switch {
	case out.TokenURL == "":
		return nil, errorf(at(path, "tokenUrl"), "is required: the identity provider's token endpoint")
	case out.Audience == "":
		return nil, errorf(at(path, "audience"), "is required: who the exchanged token is for")
	case out.ClientID == "":
		return nil, errorf(at(path, "clientId"), "is required: the gateway's client at the identity provider")
	case te.ClientSecret == nil:
		return nil, errorf(at(path, "clientSecret"), `is required: a string, {"env": NAME} or {"file": PATH}`)
	}
	if u, err := url.Parse(out.TokenURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, errorf(at(path, "tokenUrl"), "must be an http or https URL with a host, and no credentials")
	}
	out.ClientSecret = mcpupstream.Value(*te.ClientSecret)
	return out, nil
}
