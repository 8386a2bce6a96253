package registry

import "fmt"

// TokenExchange says that a tool's provider is to learn who calls it: for
// each call, the caller's access token is exchanged at TokenURL (RFC 8693)
// for a token whose audience is Audience, which the provider gets as its
// bearer token in place of the tool's credential. The gateway keeps the
// exchanged token per subject and provider until shortly before it
// expires. It is the operator's setting, and not part of the manifest
// digest: it changes who the provider is told calls, not what it is
// asked to do.
type TokenExchange struct {
	// Upstream names the provider in refusals: the upstream MCP server's
	// id, or the manifest tool's slug.
	Upstream string
	TokenURL string
	Audience string
	// Scope is asked for as written (space-separated); "" asks for none.
	Scope string
	// Resource, when set, is sent as the exchange's resource (RFC 8707).
	Resource string
	ClientID string
	// ClientSecret authenticates ClientID; it is a secret, never printed.
	ClientSecret string
	// KeyCallers: a caller that came with an API key, and so has no token
	// to exchange, is let through, the provider getting the tool's
	// credential as before. False refuses such callers
	// (upstream_identity_required).
	KeyCallers bool
}

// String keeps ClientSecret out of anything that prints a TokenExchange.
func (t TokenExchange) String() string {
	return fmt.Sprintf("TokenExchange{Upstream: %q, TokenURL: %q, Audience: %q}", t.Upstream, t.TokenURL, t.Audience)
}

// GoString keeps it out of %#v too.
func (t TokenExchange) GoString() string { return t.String() }
