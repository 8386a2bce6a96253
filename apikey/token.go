package apikey

import (
	"context"
	"errors"
	"net/http"
	"strings"
)

// MaxTokenLength is the length of the longest bearer credential read as an
// access token. Access tokens are JWTs, far longer than API keys; a longer
// credential is refused unread.
const MaxTokenLength = 8 << 10

// ErrInvalidToken is what TokenVerifier.VerifyToken returns (wrapped) for
// any access token it does not accept: badly signed, expired, for another
// audience or issuer, or naming no one it knows.
var ErrInvalidToken = errors.New("apikey: invalid access token")

// TokenCredential stands for any access token where failures are counted
// by credential (package authlimit): every JWT begins alike ("eyJ..."), so
// counting them by prefix would lock every token holder out at once. Being
// short, it is counted by the client's address only.
const TokenCredential = "token"

// TokenGrant is what a verified access token lets its bearer do.
type TokenGrant struct {
	// Principal is who the token calls as, "" when it may not call.
	Principal string
	// Approver is the approver the token decides as, "" when it may not
	// approve.
	Approver string
	// Claims are the token's claims that budgets can match: for each
	// claim a budget names, the values it names that the token's claim
	// equals (a string) or holds (an array), never an envelope claim. Nil
	// when none.
	Claims map[string][]string
	// RuleClaims are all the token's claims, decoded from its JSON
	// (numbers as float64), which the organization's rules read as
	// principal.claims (rules.WithClaims). They may say more about the
	// bearer than a log line should: never log them. Nil for an API key.
	RuleClaims map[string]any
}

// IsEnvelopeClaim reports whether a JWT claim is about the token rather
// than its bearer (who issued it, for whom, when, its id): a verifier
// never passes these in a TokenGrant's Claims, so no budget can match one.
func IsEnvelopeClaim(name string) bool {
	switch name {
	case "iss", "aud", "exp", "nbf", "iat", "jti":
		return true
	}
	return false
}

// TokenVerifier verifies the OAuth access tokens that clients send as
// "Authorization: Bearer <token>" in place of API keys, and says how a
// refused client finds where to get one. Package oauth has the
// implementation for JWTs signed by an identity provider.
type TokenVerifier interface {
	// IsToken reports whether a bearer credential is shaped as an access
	// token rather than an API key, without verifying it. Handlers ask on
	// every request, so it must be cheap.
	IsToken(credential string) bool
	// VerifyToken returns what token grants. A token it does not accept
	// gives an error matching ErrInvalidToken, whose message may be shown
	// to the client and never contains the token; any other error is the
	// verifier's own failure (the identity provider unreachable, say).
	VerifyToken(ctx context.Context, token string) (TokenGrant, error)
	// ResourceMetadataURL is the URL of the protected resource metadata
	// (RFC 9728) that every refusal names, where a client learns which
	// identity provider issues tokens and with which scopes.
	ResourceMetadataURL() string
	// Scopes are the scope a token needs to call and the one it needs to
	// approve, named in insufficient_scope refusals.
	Scopes() (call, approve string)
}

// BearerCredential returns the credential of a request's "Authorization:
// Bearer <credential>" header, up to MaxTokenLength: an API key or an
// access token. A missing, repeated or malformed header yields ok false.
func BearerCredential(r *http.Request) (credential string, ok bool) {
	return bearer(r, MaxTokenLength)
}

// bearer reads the header's credential, refusing one longer than max.
func bearer(r *http.Request, max int) (string, bool) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	scheme, token, found := strings.Cut(values[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > max || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// Challenge is the WWW-Authenticate value of a refusal under OAuth (RFC
// 6750): resource_metadata names where to learn how to sign in (RFC 9728),
// errorCode is "" when the request carried no credential, "invalid_token"
// or "insufficient_scope", and scope the scope that was missing. The values
// are quoted; a quote or backslash in them is dropped, and description is
// meant for people, never holding a credential.
func Challenge(resourceMetadata, errorCode, description, scope string) string {
	var b strings.Builder
	b.WriteString("Bearer ")
	param := func(name, value string) {
		if value == "" {
			return
		}
		if b.Len() > len("Bearer ") {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(strings.Map(func(r rune) rune {
			if r == '"' || r == '\\' || r < ' ' || r > '~' {
				return -1
			}
			return r
		}, value))
		b.WriteByte('"')
	}
	param("error", errorCode)
	param("error_description", description)
	param("scope", scope)
	param("resource_metadata", resourceMetadata)
	return b.String()
}
