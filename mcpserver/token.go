package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/internal/tokenexchange"
	"github.com/toolgate/toolgate/rules"
)

// accessToken returns the request's bearer credential when tokens are
// accepted and it is shaped as one; anything else is an API key.
func (h *Handler) accessToken(r *http.Request) (string, bool) {
	return httpx.AccessToken(r, h.tokens)
}

// tokenClaims are the claims of the access token a request came with: those
// budgets match (toolgate.WithTokenClaims) and all of them, for the
// organization's rules (rules.WithClaims).
type tokenClaims struct {
	budgets map[string][]string
	rules   map[string]any
}

// verifyToken returns the principal an access token calls as, with the
// token's claims, or answers the refusal: 401
// invalid_token for a token not accepted, 403 insufficient_scope for one
// without the call scope. Every call over MCP is a caller's: an approver's
// token alone cannot call.
func (h *Handler) verifyToken(w http.ResponseWriter, r *http.Request, token string) (string, *tokenClaims, bool) {
	g, err := h.tokens.VerifyToken(r.Context(), token)
	if (err == nil || errors.Is(err, apikey.ErrInvalidToken)) && h.limited(w, r, apikey.TokenCredential, err == nil) {
		return "", nil, false
	}
	switch {
	case errors.Is(err, apikey.ErrInvalidToken):
		reason := strings.TrimPrefix(strings.TrimPrefix(err.Error(), apikey.ErrInvalidToken.Error()), ": ")
		w.Header().Set("WWW-Authenticate", apikey.Challenge(h.tokens.ResourceMetadataURL(), "invalid_token", reason, ""))
		writeRPCError(w, http.StatusUnauthorized, "the access token is not accepted: "+reason)
		return "", nil, false
	case err != nil:
		h.g.log.ErrorContext(r.Context(), "cannot verify an access token", "error", err)
		writeRPCError(w, http.StatusServiceUnavailable, "access tokens cannot be verified now; try again later")
		return "", nil, false
	case g.Principal == "":
		call, _ := h.tokens.Scopes()
		w.Header().Set("WWW-Authenticate", apikey.Challenge(h.tokens.ResourceMetadataURL(), "insufficient_scope", "", call))
		writeRPCError(w, http.StatusForbidden, "the access token has no "+call+" scope: it cannot call")
		return "", nil, false
	}
	return g.Principal, &tokenClaims{budgets: g.Claims, rules: g.RuleClaims}, true
}

// challenge is the WWW-Authenticate of a 401 for a request without a
// valid key or token: with tokens accepted, where to learn how to get one
// (RFC 9728), and invalid_token when a credential was sent.
func (h *Handler) challenge(r *http.Request) string {
	if h.tokens == nil {
		return `Bearer realm="toolgate"`
	}
	code := ""
	if r.Header.Get("Authorization") != "" {
		code = "invalid_token"
	}
	return apikey.Challenge(h.tokens.ResourceMetadataURL(), code, "", "")
}

// extraTokenClaims names, among the facts the HTTP handler attaches to
// each message (TokenInfo.Extra), the claims of the access token the
// request came with: the SDK runs a message's handler in its session's
// context rather than the request's, so they travel with the message.
const extraTokenClaims = "toolgate/tokenClaims"

// claimsKey carries a request's token claims from authentication to the
// SDK's bearer check, which attaches them to the message.
type claimsKey struct{}

// withCallerClaims returns ctx carrying the claims of the access token
// that req came with, for the gateway to count the call in the budgets
// they join (toolgate.WithTokenClaims) and for the organization's rules to
// read (rules.WithClaims); ctx as it is for a key's caller.
func withCallerClaims(ctx context.Context, req mcp.Request) context.Context {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return ctx
	}
	if claims, _ := extra.TokenInfo.Extra[extraTokenClaims].(*tokenClaims); claims != nil {
		ctx = rules.WithClaims(toolgate.WithTokenClaims(ctx, claims.budgets), claims.rules)
	}
	if token, ok := extra.TokenInfo.Extra[extraCallerToken].(callerToken); ok {
		ctx = tokenexchange.WithCallerToken(ctx, string(token))
	}
	return ctx
}

// extraCallerToken names, among a message's TokenInfo.Extra, the access
// token its request came with, for a tool whose provider is to be sent
// one exchanged for it; callerTokenKey carries it from authentication to
// the SDK's bearer check, as claimsKey carries the claims.
const extraCallerToken = "toolgate/callerToken"

type callerTokenKey struct{}

// callerToken is the token as it rides: printed, it shows a mark.
type callerToken string

func (callerToken) String() string   { return "[token]" }
func (callerToken) GoString() string { return "[token]" }
