package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/toolgatetype"
)

// PrincipalTemplate is the id of the principal template: the entry of
// "principals" whose spend controls and approval mode every token subject
// without an entry of its own gets, each as its own principal.
const PrincipalTemplate = "*"

// OAuth is the "oauth" section: the identity provider whose access tokens
// the server accepts beside API keys.
type OAuth struct {
	Issuer         string
	Audience       string
	JWKSURL        string // "" discovers it
	PrincipalClaim string // "" is "sub"
	ApproverClaim  string // "" lets no token approve
	CallScope      string // "" is "toolgate:call"
	ApproveScope   string // "" is "toolgate:approve"
	// Pages, when set, signs people in on the approval pages through the
	// provider (oauthpages.go).
	Pages *OAuthPages
}

// oauthJSON is the "oauth" section.
type oauthJSON struct {
	Issuer         *string `json:"issuer"`
	Audience       *string `json:"audience"`
	JWKSURL        *string `json:"jwksUrl"`
	PrincipalClaim *string `json:"principalClaim"`
	ApproverClaim  *string `json:"approverClaim"`
	Scopes         *struct {
		Call    *string `json:"call"`
		Approve *string `json:"approve"`
	} `json:"scopes"`
	Pages *oauthPagesJSON `json:"pages"`
}

// oauth checks the "oauth" section. The URLs follow the verifier's rule:
// https://, or http:// on a loopback address.
func (in *oauthJSON) oauth(path string) (*OAuth, error) {
	o := &OAuth{}
	if in.Issuer != nil {
		o.Issuer = *in.Issuer
	}
	if in.Audience != nil {
		o.Audience = *in.Audience
	}
	if in.JWKSURL != nil {
		o.JWKSURL = *in.JWKSURL
	}
	if in.PrincipalClaim != nil {
		if o.PrincipalClaim = *in.PrincipalClaim; o.PrincipalClaim == "" {
			return nil, errorf(at(path, "principalClaim"), `must name a claim, such as "sub"`)
		}
	}
	if in.ApproverClaim != nil {
		if o.ApproverClaim = *in.ApproverClaim; o.ApproverClaim == "" {
			return nil, errorf(at(path, "approverClaim"), "must name a claim; leave it out for tokens that never approve")
		}
	}
	if sc := in.Scopes; sc != nil {
		for _, f := range []struct {
			dst  *string
			src  *string
			name string
		}{{&o.CallScope, sc.Call, "call"}, {&o.ApproveScope, sc.Approve, "approve"}} {
			if f.src == nil {
				continue
			}
			if *f.dst = *f.src; *f.dst == "" || strings.ContainsAny(*f.dst, " \"\\") {
				return nil, errorf(at(at(path, "scopes"), f.name), "must be one scope: no spaces, quotes or backslashes")
			}
		}
	}
	if o.Issuer == "" {
		return nil, errorf(at(path, "issuer"), "is required: the identity provider's issuer URL")
	}
	if o.Audience == "" {
		return nil, errorf(at(path, "audience"), "is required: the URL clients reach this server's /mcp at, which tokens must be issued for")
	}
	// The verifier's own checks, named by the field they concern.
	if _, err := oauth.New(o.verifierConfig()); err != nil {
		field := map[string]string{"Issuer": "issuer", "Audience": "audience", "JWKSURL": "jwksUrl",
			"CallScope": "scopes.call", "ApproveScope": "scopes.approve"}
		if ce, ok := err.(*oauth.ConfigError); ok {
			return nil, &ConfigError{Path: at(path, field[ce.Field]), Msg: ce.Msg}
		}
		return nil, errorf(path, "%v", err)
	}
	if in.Pages != nil {
		var err error
		if o.Pages, err = in.Pages.pages(at(path, "pages")); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// verifierConfig is the section as the verifier takes it.
func (o *OAuth) verifierConfig() *oauth.Config {
	return &oauth.Config{
		Issuer:         o.Issuer,
		Audience:       o.Audience,
		JWKSURL:        o.JWKSURL,
		PrincipalClaim: o.PrincipalClaim,
		ApproverClaim:  o.ApproverClaim,
		CallScope:      o.CallScope,
		ApproveScope:   o.ApproveScope,
	}
}

// template is the principal template, when the config has one.
func (c *Config) template() *Principal {
	for i := range c.Principals {
		if c.Principals[i].ID == PrincipalTemplate {
			return &c.Principals[i]
		}
	}
	return nil
}

// checkPrincipals checks the principals against the rest of the file:
// without "oauth", every principal needs a key; the template needs
// "oauth" and has no keys of its own. An approver needs a way in: keys,
// claims, or the oauth section's approverClaim; claims need "oauth".
func checkPrincipals(cfg *Config) error {
	for i, pr := range cfg.Principals {
		at := fmt.Sprintf("principals[%d]", i)
		keys := len(pr.APIKeys) + len(pr.APIKeyDigests)
		switch {
		case pr.ID == PrincipalTemplate && cfg.OAuth == nil:
			return &ConfigError{Path: at + ".id", Msg: `"*" is the template for the subjects of access tokens, which need an "oauth" section`}
		case pr.ID == PrincipalTemplate && keys > 0:
			return &ConfigError{Path: at, Msg: `the "*" template stands for token subjects and has no API keys of its own`}
		case keys == 0 && cfg.OAuth == nil:
			return &ConfigError{Path: at, Msg: fmt.Sprintf("principal %q has no apiKeys or apiKeySha256, so it could never call", pr.ID)}
		}
	}
	for i, a := range cfg.Approvers {
		at := fmt.Sprintf("approvers[%d]", i)
		if len(a.Claims) > 0 && cfg.OAuth == nil {
			return &ConfigError{Path: at + ".claims", Msg: `claims match access tokens, which need an "oauth" section; give keys for an approver who signs in with a key`}
		}
		if len(a.Keys)+len(a.KeyDigests)+len(a.Claims) == 0 && (cfg.OAuth == nil || cfg.OAuth.ApproverClaim == "") {
			return &ConfigError{Path: at, Msg: fmt.Sprintf("approver %q has no keys, keySha256 or claims, and no oauth.approverClaim can name it, so it could never sign in", a.ID)}
		}
		if j := slices.Index(a.Principals, PrincipalTemplate); j >= 0 {
			return &ConfigError{Path: fmt.Sprintf("%s.principals[%d]", at, j), Msg: `an approver approves for principals it names, not for the "*" template`}
		}
	}
	return nil
}

// keysAtStart bounds one request to the identity provider.
const keysAtStart = 10 * time.Second

// newVerifier makes the verifier of the config's tokens: a token calls as
// a configured principal, or as any subject when the template is there,
// and approves as an approver in force (isApprover). It fetches the
// provider's keys at once, in the background, to report a wrong issuer
// early without holding the start up: a provider that does not answer is
// logged, and asked again when tokens come.
func newVerifier(ctx context.Context, cfg *Config, isApprover func(id string) bool, log *slog.Logger) (*oauth.Verifier, error) {
	vc := cfg.OAuth.verifierConfig()
	vc.Logger = log
	vc.HTTPClient = &http.Client{Timeout: keysAtStart}
	if cfg.template() == nil {
		principals := map[string]bool{}
		for _, p := range cfg.Principals {
			principals[p.ID] = true
		}
		vc.Principals = func(id string) bool { return principals[id] }
	}
	vc.Approvers = isApprover // the approvers in force, which a reload changes
	vc.ClaimApprovers = claimApprovers(cfg.Approvers)
	// Tokens keep only the claims the budgets match people by.
	vc.BudgetClaims = oauth.BudgetClaims(cfg.Budgets)
	v, err := oauth.New(vc)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	go func() {
		fetch, cancel := context.WithTimeout(ctx, keysAtStart)
		defer cancel()
		if err := v.FetchKeys(fetch); err != nil {
			log.Warn("cannot fetch the identity provider's keys yet; access tokens are refused until they can be",
				"issuer", cfg.OAuth.Issuer, "error", err)
		}
	}()
	return v, nil
}

// templateControls are the operator's spend controls: a principal's own
// entry, or else the template's, which every token subject without an
// entry thus gets as its own (its spend and rate windows are counted per
// principal).
type templateControls struct {
	controls map[string]toolgatetype.SpendControls
	template toolgatetype.SpendControls
}

func (t templateControls) SpendControls(_ context.Context, principal string) (toolgatetype.SpendControls, error) {
	if c, ok := t.controls[principal]; ok {
		return c, nil
	}
	return t.template, nil
}
