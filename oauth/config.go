package oauth

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/weburl"
)

// Defaults of the Config fields left zero.
const (
	DefaultPrincipalClaim = "sub"
	DefaultCallScope      = "toolgate:call"
	DefaultApproveScope   = "toolgate:approve"
	// Leeway is how far past exp, and before nbf, a token is still
	// accepted: the clocks of the identity provider and the gateway differ.
	Leeway = 60 * time.Second
	// MinRefreshInterval is the shortest time between two fetches of the
	// identity provider's keys (or discovery document), however many
	// tokens name a key it does not hold: an unknown kid costs the
	// provider at most one request a minute.
	MinRefreshInterval = time.Minute
	// fetchTimeout bounds one fetch of a discovery document or key set.
	fetchTimeout = 10 * time.Second
	// maxDocumentBytes caps a discovery document or key set.
	maxDocumentBytes = 1 << 20
)

// Clock tells the verifier the time, for exp, nbf and how often keys are
// refreshed. toolgatetype.Clock is one.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Config is what a Verifier accepts. Issuer and Audience are required; the
// other fields have defaults.
type Config struct {
	// Issuer is the identity provider's issuer URL, exactly as its tokens'
	// iss claim gives it. It must be https://, or http:// on a loopback
	// address (tests and local providers).
	Issuer string
	// Audience is the resource identifier of the gateway (RFC 8707), the
	// URL clients reach it at ("https://toolgate.example/mcp"), which
	// every token's aud must include. Its protected resource metadata is
	// published at the well-known URL derived from it (RFC 9728). Same
	// scheme rule as Issuer.
	Audience string
	// JWKSURL is where the provider publishes its signing keys; "" reads
	// it from the provider's OpenID discovery document
	// (Issuer + "/.well-known/openid-configuration"). Same scheme rule as
	// Issuer.
	JWKSURL string
	// PrincipalClaim is the claim whose value is who a token calls as
	// (default "sub").
	PrincipalClaim string
	// ApproverClaim is the claim whose value names the approver a token
	// with the approve scope decides as; "" means tokens never approve.
	ApproverClaim string
	// CallScope is the scope a token needs to call (default
	// "toolgate:call"); ApproveScope the one it needs to approve (default
	// "toolgate:approve").
	CallScope    string
	ApproveScope string
	// Principals reports whether a token may call as id, the value of its
	// PrincipalClaim. Nil lets any subject of the provider call, each as
	// its own principal.
	Principals func(id string) bool
	// Approvers reports whether id, the value of a token's ApproverClaim,
	// is an approver. Nil accepts any value.
	Approvers func(id string) bool
	// ClaimApprovers are the approvers whom a token with the ApproveScope
	// reaches by its claims, when its ApproverClaim names none: the first
	// whose Claims all match is its approver.
	ClaimApprovers []ClaimApprover
	// BudgetClaims are the (claim name, values) pairs that budgets match
	// tokens by (BudgetClaims builds them from the budgets' definitions):
	// a grant's Claims hold those of a token's claims among them, and
	// nothing else. Nil keeps no claims, and no budget matches a token by
	// its claims. Envelope claims (iss, aud, exp, nbf, iat, jti) are
	// never kept.
	BudgetClaims map[string][]string
	// HTTPClient fetches the discovery document and keys; nil means a
	// client with a 10 s timeout. It talks to the identity provider only.
	HTTPClient *http.Client
	// Clock tells the time; nil means the system clock.
	Clock Clock
	// Logger is told when fetching keys fails; nil discards. Tokens are
	// never logged.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.PrincipalClaim == "" {
		c.PrincipalClaim = DefaultPrincipalClaim
	}
	if c.CallScope == "" {
		c.CallScope = DefaultCallScope
	}
	if c.ApproveScope == "" {
		c.ApproveScope = DefaultApproveScope
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: fetchTimeout}
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// ConfigError names the Config field that is wrong.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return "oauth: " + e.Field + ": " + e.Msg }

func (c Config) validate() error {
	if err := checkURL(c.Issuer); err != nil {
		return &ConfigError{Field: "Issuer", Msg: err.Error()}
	}
	if err := checkURL(c.Audience); err != nil {
		return &ConfigError{Field: "Audience", Msg: err.Error()}
	}
	if c.JWKSURL != "" {
		if err := checkURL(c.JWKSURL); err != nil {
			return &ConfigError{Field: "JWKSURL", Msg: err.Error()}
		}
	}
	if c.CallScope == c.ApproveScope {
		return &ConfigError{Field: "ApproveScope", Msg: fmt.Sprintf("%q is also the call scope", c.ApproveScope)}
	}
	for field, s := range map[string]string{"CallScope": c.CallScope, "ApproveScope": c.ApproveScope} {
		if strings.ContainsAny(s, " \"\\") {
			return &ConfigError{Field: field, Msg: "a scope has no spaces, quotes or backslashes"}
		}
	}
	return nil
}

// checkURL accepts an absolute https URL, or an http one whose host is a
// loopback address, with no user, query or fragment: what a token may be
// bound to, and what keys may be fetched from, without a network in the
// middle being able to change them.
func checkURL(s string) error {
	if s == "" {
		return errors.New("is required")
	}
	u, err := weburl.Check(s, weburl.Allow{AnyScheme: true, PortOnlyHost: true, Path: true, EmptyFragment: true})
	if err != nil {
		return fmt.Errorf("%q is not an absolute URL without query or fragment", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
		return fmt.Errorf("%q: http:// is allowed only on a loopback address; use https://", s)
	}
	return fmt.Errorf("%q is not an https:// URL", s)
}

// loopback reports whether host is localhost or a loopback IP address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
