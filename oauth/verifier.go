package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/textcheck"
)

// maxPrincipalLength is the longest principal or approver id a token may
// name, the gateway's own limit.
const maxPrincipalLength = 255

// ErrUnavailable is returned, wrapped, when no token can be verified
// because the identity provider's keys could not be fetched.
var ErrUnavailable = errors.New("oauth: the identity provider's keys are unavailable")

// Verifier verifies the JWT access tokens an identity provider issues for
// the gateway, and says what each lets its bearer do. It is the
// apikey.TokenVerifier the HTTP API and the MCP server take. Safe for
// concurrent use.
//
// A token is accepted when it is a compact JWS signed with RS256, ES256 or
// EdDSA by a key in the issuer's key set, its iss is the Issuer, its aud
// includes the Audience, and it has an exp, which with nbf is checked
// with 60 s of leeway. Its scope (a space-separated "scope" claim, or an
// "scp" claim as a string or list) then says what it may do: with the call
// scope it calls as the value of its principal claim, with the approve
// scope it decides as the approver its approver claim names, or else the
// first of the claim approvers whose claims it holds.
type Verifier struct {
	cfg      Config
	keys     *keySet
	oidc     *oidc.IDTokenVerifier
	verified *verified
	metadata string // the URL of the resource metadata
	// budgetClaims is Config.BudgetClaims, copied for lookups, or those
	// of SetBudgetClaims since.
	budgetClaims atomic.Pointer[budgetClaimSet]
	// claimApprovers is Config.ClaimApprovers, or those of
	// SetClaimApprovers since.
	claimApprovers atomic.Pointer[claimApprovers]
}

var _ apikey.TokenVerifier = (*Verifier)(nil)

// New returns a verifier for the tokens cfg describes. It does no I/O: the
// provider's keys are fetched when the first token comes, or by
// FetchKeys.
func New(cfg *Config) (*Verifier, error) {
	if cfg == nil {
		return nil, &ConfigError{Field: "Issuer", Msg: "is required"}
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	v := &Verifier{cfg: c, verified: newVerified(), metadata: MetadataURL(c.Audience)}
	set := newBudgetClaimSet(c.BudgetClaims)
	v.budgetClaims.Store(&set)
	v.claimApprovers.Store(newClaimApprovers(c.ClaimApprovers))
	v.keys = &keySet{
		issuer:    c.Issuer,
		client:    c.HTTPClient,
		clock:     c.Clock,
		log:       c.Logger,
		jwksURL:   c.JWKSURL,
		discover:  c.JWKSURL == "",
		onRefresh: v.verified.reset,
	}
	algs := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		algs[i] = string(a)
	}
	v.oidc = oidc.NewVerifier(c.Issuer, v.keys, &oidc.Config{
		ClientID:             c.Audience,
		SupportedSigningAlgs: algs,
		// exp and nbf are checked here, with the leeway the provider's
		// clock needs.
		SkipExpiryCheck: true,
	})
	return v, nil
}

// SetBudgetClaims replaces Config.BudgetClaims, for budgets changed while
// the verifier runs, and forgets the tokens verified so far: each is read
// again, with these claims and with what Config.Principals and
// Config.Approvers say by then.
func (v *Verifier) SetBudgetClaims(pairs map[string][]string) {
	set := newBudgetClaimSet(pairs)
	v.budgetClaims.Store(&set)
	v.verified.reset()
}

// FetchKeys fetches the identity provider's keys now (discovering where
// they are first, without a JWKSURL), rather than when the first token
// comes: a server calls it at start to report a wrong issuer early. Like
// every fetch, it happens at most once a minute.
func (v *Verifier) FetchKeys(ctx context.Context) error {
	if err := v.keys.refresh(ctx, v.keys.current.Load(), true); err != nil && !errors.Is(err, errTooSoon) {
		return err
	}
	return nil
}

// IsToken reports whether credential is shaped as a compact JWS: three
// base64url parts, the first a JSON object. API keys never are.
func (v *Verifier) IsToken(credential string) bool {
	return IsJWT(credential)
}

// IsJWT reports whether s is shaped as a compact JWS (header.payload.
// signature in base64url, the header a JSON object), without decoding it.
// The signature part may be empty, as it is in an unsigned token, so that
// such a token is refused as a token rather than looked up as a key.
func IsJWT(s string) bool {
	if !strings.HasPrefix(s, "eyJ") {
		return false
	}
	dots := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			dots++
			if dots > 2 || s[i-1] == '.' {
				return false
			}
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return dots == 2
}

// invalid wraps apikey.ErrInvalidToken with why, for the client.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{apikey.ErrInvalidToken}, args...)...)
}

// claims are the claims read beyond what go-oidc checks.
type claims map[string]json.RawMessage

// VerifyToken returns what token grants: Principal when it has the call
// scope and its principal claim names one Config.Principals accepts,
// Approver when it has the approve scope and its approver claim names an
// approver, or its claims match a claim approver's. A token that verifies but grants neither, for want of a scope,
// is no error: the caller answers insufficient_scope. Every refusal
// matches apikey.ErrInvalidToken, except a provider whose keys cannot be
// fetched (ErrUnavailable).
func (v *Verifier) VerifyToken(ctx context.Context, token string) (apikey.TokenGrant, error) {
	now := v.cfg.Clock.Now()
	digest := sha256.Sum256([]byte(token))
	g, gen, ok := v.verified.get(digest, now)
	if ok {
		return g, nil
	}
	if !IsJWT(token) {
		return apikey.TokenGrant{}, invalid("not a JWT")
	}
	idt, err := v.oidc.Verify(ctx, token)
	if err != nil {
		if v.keys.current.Load() == nil {
			return apikey.TokenGrant{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		// go-oidc's reasons name the issuer or audience expected, which a
		// client may see; never the token.
		return apikey.TokenGrant{}, invalid("%s", strings.TrimPrefix(err.Error(), "oidc: "))
	}
	var c claims
	if err := idt.Claims(&c); err != nil {
		return apikey.TokenGrant{}, invalid("its claims are not a JSON object")
	}
	exp, ok := c.numericDate("exp")
	switch {
	case !ok:
		return apikey.TokenGrant{}, invalid("it has no exp")
	case !now.Before(exp.Add(Leeway)):
		return apikey.TokenGrant{}, invalid("it expired at %s", exp.UTC().Format(time.RFC3339))
	}
	if _, present := c["nbf"]; present {
		nbf, ok := c.numericDate("nbf")
		if !ok {
			return apikey.TokenGrant{}, invalid("its nbf is not a time")
		}
		if now.Add(Leeway).Before(nbf) {
			return apikey.TokenGrant{}, invalid("it is not valid before %s", nbf.UTC().Format(time.RFC3339))
		}
	}
	g, err = v.grant(c)
	if err != nil {
		return apikey.TokenGrant{}, err
	}
	v.verified.put(digest, g, exp.Add(Leeway), now, gen)
	return g, nil
}

// grant reads what a verified token's scopes and claims allow.
func (v *Verifier) grant(c claims) (apikey.TokenGrant, error) {
	scopes := c.scopes()
	var g apikey.TokenGrant
	var refused []string
	if scopes[v.cfg.CallScope] {
		id, ok := c.str(v.cfg.PrincipalClaim)
		switch {
		case ok && textcheck.Problem(id) != "":
			// Kept with every call the token makes: a subject no store
			// can keep is the token's fault, never a 500 from the store.
			refused = append(refused, fmt.Sprintf("its %s claim %s", v.cfg.PrincipalClaim, textcheck.Problem(id)))
		case !ok || !validID(id):
			refused = append(refused, fmt.Sprintf("its %s claim names no principal", v.cfg.PrincipalClaim))
		case v.cfg.Principals != nil && !v.cfg.Principals(id):
			refused = append(refused, fmt.Sprintf("its %s claim names no principal of this gateway", v.cfg.PrincipalClaim))
		default:
			g.Principal = id
		}
	}
	if scopes[v.cfg.ApproveScope] {
		id, why := v.approverOf(c)
		if why != "" && id == "" {
			refused = append(refused, why)
		}
		g.Approver = id
	}
	if g.Principal == "" && g.Approver == "" && len(refused) > 0 {
		return g, invalid("%s", strings.Join(refused, "; "))
	}
	g.Claims = c.budgetClaims(*v.budgetClaims.Load())
	g.RuleClaims = c.all()
	return g, nil
}

// all are the claims decoded, for the organization's rules: every one,
// envelope claims too, as a rule may read who issued the token. The token
// is at most apikey.MaxTokenLength long, which bounds what a cached grant
// keeps.
func (c claims) all() map[string]any {
	out := make(map[string]any, len(c))
	for name, raw := range c {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			out[name] = v
		}
	}
	return out
}

// validID is a principal or approver id the gateway accepts, and not the
// principal template's "*".
func validID(id string) bool {
	return id != "" && id != "*" && len(id) <= maxPrincipalLength
}

// str is a claim's value when it is a string.
func (c claims) str(name string) (string, bool) {
	raw, ok := c[name]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// numericDate is a claim's value as a NumericDate (seconds since the
// epoch, perhaps fractional).
func (c claims) numericDate(name string) (time.Time, bool) {
	raw, ok := c[name]
	if !ok {
		return time.Time{}, false
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || math.IsNaN(f) || f < 0 || f > 1e12 {
		return time.Time{}, false
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), true
}

// scopes are the token's scopes: "scope" as a space-separated string (RFC
// 9068, RFC 8693), or "scp" as a string or a list, as some providers
// issue.
func (c claims) scopes() map[string]bool {
	out := map[string]bool{}
	if s, ok := c.str("scope"); ok {
		for _, f := range strings.Fields(s) {
			out[f] = true
		}
		return out
	}
	if s, ok := c.str("scp"); ok {
		for _, f := range strings.Fields(s) {
			out[f] = true
		}
		return out
	}
	var list []string
	if raw, ok := c["scp"]; ok && json.Unmarshal(raw, &list) == nil {
		for _, f := range list {
			out[f] = true
		}
	}
	return out
}
