package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/internal/tokenexchange"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/toolgatetype"
)

// requiredRole is what a route needs a token to grant.
type requiredRole uint8

const (
	needCaller requiredRole = iota + 1
	needApprover
	needEither
)

// serveToken authenticates a request that carries an access token and
// hands it on as its principal or approver, as role asks, or answers the
// refusal: 401 invalid_token for a token not accepted, 403
// insufficient_scope for one that grants nothing the route takes.
func (h *Handler) serveToken(w http.ResponseWriter, r *http.Request, token string, role requiredRole, next http.HandlerFunc) {
	g, err := h.tokens.VerifyToken(r.Context(), token)
	if (err == nil || errors.Is(err, apikey.ErrInvalidToken)) && h.limited(w, r, apikey.TokenCredential, err == nil) {
		return
	}
	if err != nil {
		if !errors.Is(err, apikey.ErrInvalidToken) {
			h.writeError(w, r, err) // the verifier's own failure: 500, logged
			return
		}
		reason := strings.TrimPrefix(strings.TrimPrefix(err.Error(), apikey.ErrInvalidToken.Error()), ": ")
		w.Header().Set("WWW-Authenticate", apikey.Challenge(h.tokens.ResourceMetadataURL(), "invalid_token", reason, ""))
		h.writeError(w, r, httpx.Errorf(toolgatetype.CodeUnauthorized, "the access token is not accepted: %s", reason))
		return
	}
	callScope, approveScope := h.tokens.Scopes()
	switch {
	case (role == needCaller || role == needEither) && g.Principal != "":
		// The token's claims ride with the request, so that its calls
		// count in the budgets they join and the organization's rules
		// read them. The token itself rides too, for a tool whose provider
		// is to be sent one exchanged for it (tokenexchange).
		ctx := rules.WithClaims(toolgate.WithTokenClaims(r.Context(), g.Claims), g.RuleClaims)
		r = r.WithContext(tokenexchange.WithCallerToken(ctx, token))
		next(w, withPrincipal(r, g.Principal))
	case (role == needApprover || role == needEither) && g.Approver != "":
		next(w, withApprover(r, g.Approver))
	case role == needApprover:
		h.refuseScope(w, r, approveScope, "the access token has no "+approveScope+" scope with an approver: only an approver can do this")
	default:
		h.refuseScope(w, r, callScope, "the access token has no "+callScope+" scope: it cannot call")
	}
}

// refuseScope answers 403 insufficient_scope, naming the scope needed.
func (h *Handler) refuseScope(w http.ResponseWriter, r *http.Request, scope, msg string) {
	w.Header().Set("WWW-Authenticate", apikey.Challenge(h.tokens.ResourceMetadataURL(), "insufficient_scope", "", scope))
	h.writeError(w, r, httpx.Errorf(httpx.CodeInsufficientScope, "%s", msg))
}

// tokenChallenge is the WWW-Authenticate of a 401 when tokens are
// accepted: where to learn how to get one, and invalid_token when the
// request sent a credential that was refused.
func (h *Handler) tokenChallenge(r *http.Request) string {
	code := ""
	if r.Header.Get("Authorization") != "" {
		code = "invalid_token"
	}
	return apikey.Challenge(h.tokens.ResourceMetadataURL(), code, "", "")
}
