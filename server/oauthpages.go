package server

import (
	"net"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/internal/textcheck"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/sealing"
)

// OAuthPages is "oauth.pages": the approval pages' client at the identity
// provider, through which people sign in on the pages (OpenID Connect,
// authorization code with PKCE) beside approver keys.
type OAuthPages struct {
	ClientID     string
	ClientSecret string // "" for a public client
	// RedirectURL is where the provider sends people back; the server
	// answers there, at its path.
	RedirectURL string
	Name        string   // on the sign-in button; "" is the issuer's host
	Scopes      []string // asked for beside "openid"
}

// oauthPagesJSON is "oauth.pages".
type oauthPagesJSON struct {
	ClientID     *string `json:"clientId"`
	ClientSecret *string `json:"clientSecret"`
	RedirectURL  *string `json:"redirectUrl"`
	Name         *string `json:"name"`
	Scopes       []str   `json:"scopes"`
}

// pages checks "oauth.pages".
func (in *oauthPagesJSON) pages(path string) (*OAuthPages, error) {
	p := &OAuthPages{Scopes: strs(in.Scopes)}
	for _, f := range []struct {
		dst *string
		src *string
	}{{&p.ClientID, in.ClientID}, {&p.ClientSecret, in.ClientSecret}, {&p.RedirectURL, in.RedirectURL}, {&p.Name, in.Name}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if p.ClientID == "" {
		return nil, errorf(at(path, "clientId"), "is required: the approval pages' client id at the identity provider, which ID tokens are issued for")
	}
	if p.RedirectURL == "" {
		return nil, errorf(at(path, "redirectUrl"), "is required: the URL of this server the identity provider sends people back to, as registered for the client")
	}
	if err := checkRedirectURL(p.RedirectURL); err != "" {
		return nil, errorf(at(path, "redirectUrl"), "%q: %s", p.RedirectURL, err)
	}
	if p.Name != "" {
		if problem := textcheck.Problem(p.Name); problem != "" {
			return nil, errorf(at(path, "name"), "%s", problem)
		}
	}
	for i, s := range p.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") {
			return nil, errorf(index(at(path, "scopes"), i), "must be one scope: no spaces, quotes or backslashes")
		}
	}
	return p, nil
}

// checkRedirectURL says what is wrong with a redirect URL, or "": an
// absolute https:// URL (http:// on a loopback address), with no query or
// fragment, whose path the server can answer at: not its root, nor a path
// of the pages or the API.
func checkRedirectURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "must be an absolute http:// or https:// URL"
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return "http:// is allowed only on a loopback address; use https://"
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "must have no user, query or fragment"
	case u.Path == "" || u.Path == "/" || strings.Contains(u.Path, "{"):
		return `must have a path for the server to answer at, such as "/approvals/signed-in"`
	}
	for _, taken := range []string{httpx.ApprovalPagesPath, approvalpage.SpendPagePath, "/mcp", "/healthz"} {
		if u.Path == taken {
			return "its path is one the server already serves"
		}
	}
	for _, taken := range []string{"/v1/", "/.well-known/", "/tools/", "/mcp/"} {
		if strings.HasPrefix(u.Path, taken) {
			return "its path is one the server already serves"
		}
	}
	return ""
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkPages refuses pages nobody could sign in on: the ID token's claims
// must be able to name an approver.
//
// Approvers matched by their claims (section 30) make another way: when
// they come, a config with such approvers passes here too.
func checkPages(cfg *Config) error {
	if cfg.OAuth == nil || cfg.OAuth.Pages == nil || cfg.OAuth.ApproverClaim != "" {
		return nil
	}
	for _, a := range cfg.Approvers {
		if len(a.Claims) > 0 {
			return nil
		}
	}
	return errorf("oauth.pages", `needs "oauth.approverClaim", the ID token claim naming the approver a person is, or an approver with "claims": without either nobody could sign in`)
}

// pagesApprover is who a person signed in through the provider is, as
// their ID token's claims say it as an access token's would: the
// approver oauth.approverClaim names, when it is one in force, else the
// first approver whose "claims" they hold (oauth.Verifier.ApproverFor,
// which follows reloads). Without a verifier, approverClaim alone.
func pagesApprover(o *OAuth, isApprover func(string) bool, verifier *oauth.Verifier) func(map[string]any) (string, bool) {
	return func(claims map[string]any) (string, bool) {
		if verifier != nil {
			id, ok := verifier.ApproverFor(claims)
			return id, ok && isApprover(id)
		}
		if o.ApproverClaim == "" {
			return "", false
		}
		id, ok := claims[o.ApproverClaim].(string)
		if !ok || id == "" || textcheck.Problem(id) != "" || !isApprover(id) {
			return "", false
		}
		return id, true
	}
}

// providerSignIn is the pages' sign-in through the provider, when the
// config has one; the sealing keys are the fleet's, so that any instance
// may answer the provider's redirect.
func providerSignIn(cfg *Config, isApprover func(string) bool, keys *sealing.Keys, verifier *oauth.Verifier) *approvalpage.ProviderSignIn {
	if cfg.OAuth == nil || cfg.OAuth.Pages == nil {
		return nil
	}
	p := cfg.OAuth.Pages
	return &approvalpage.ProviderSignIn{
		Name:         p.Name,
		Issuer:       cfg.OAuth.Issuer,
		ClientID:     p.ClientID,
		ClientSecret: p.ClientSecret,
		RedirectURL:  p.RedirectURL,
		Scopes:       p.Scopes,
		Approver:     pagesApprover(cfg.OAuth, isApprover, verifier),
		Sealing:      keys,
	}
}
