package toolrun

import (
	"context"

	"github.com/toolgate/toolgate/internal/tokenexchange"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
)

// IdentityMissing refuses a call of v by a caller without an access
// token, when v's provider must learn who calls and has no credential for
// key callers: upstream_identity_required, naming the provider. It needs
// no exchange, so a quote can tell it too.
func IdentityMissing(ctx context.Context, v *registry.Version) error {
	te := v.Tool.TokenExchange
	if te == nil || te.KeyCallers {
		return nil
	}
	if _, ok := tokenexchange.CallerToken(ctx); ok {
		return nil
	}
	return toolgatetype.Errorf(toolgatetype.CodeUpstreamIdentityRequired,
		"%s must be told who calls it: call it with an access token from the identity provider, not an API key", te.Upstream)
}

// UpstreamToken is the token v's provider is to be sent for a call by
// principal (WithUpstreamToken it in the context Call runs with): one exchanged for the caller's access token (or kept from an
// earlier exchange), "" when v sends what it always sends. Before the call
// is admitted, so that a refused exchange runs and charges nothing:
// upstream_auth_failed, naming the provider and never a token.
func (r *Runner) UpstreamToken(ctx context.Context, v *registry.Version, principal string) (string, error) {
	te := v.Tool.TokenExchange
	if te == nil {
		return "", nil
	}
	if err := IdentityMissing(ctx, v); err != nil {
		return "", err
	}
	caller, ok := tokenexchange.CallerToken(ctx)
	if !ok {
		return "", nil // a key caller, sent the credential
	}
	tok, err := r.Exchanger.Token(ctx, tokenexchange.Config{
		Upstream: te.Upstream, TokenURL: te.TokenURL, Audience: te.Audience, Scope: te.Scope,
		Resource: te.Resource, ClientID: te.ClientID, ClientSecret: te.ClientSecret,
	}, principal, caller)
	if err != nil {
		return "", &toolgatetype.Error{
			Code:    toolgatetype.CodeUpstreamAuthFailed,
			Message: "the identity provider did not give a token for " + te.Upstream + " on the caller's behalf; the call was not run and nothing was charged",
			Err:     err,
		}
	}
	return tok, nil
}
