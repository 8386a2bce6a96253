package approvalpage

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/sealing"
)

// ProviderSignIn lets people sign in on the pages with the organization's
// identity provider, beside approver keys: OpenID Connect's authorization
// code flow with PKCE. The claims of the person's ID token, verified
// (signature by the provider's key set, issuer, audience, expiry, nonce),
// decide which approver they are, through Approver; the session is then
// the one an approver key starts, and signing out ends it (not the
// person's session at the provider).
type ProviderSignIn struct {
	// Name is the provider as the sign-in button names it ("Sign in with
	// Name"); "" means the issuer's host.
	Name string
	// Issuer is the provider's issuer URL; its discovery document is read
	// at the first sign-in, and again until it is read once.
	Issuer string
	// ClientID and ClientSecret are the pages' client at the provider;
	// ClientID is the audience ID tokens must be issued for. An empty
	// ClientSecret makes the pages a public client (PKCE alone).
	ClientID, ClientSecret string
	// RedirectURL is where the provider sends the browser back, as the
	// provider has it registered. The handler answers GET at its path,
	// which must be one no page or API route has: a path the handler
	// already serves panics at NewHandler, as http.ServeMux does.
	RedirectURL string
	// Scopes are asked for beside "openid", for providers that put the
	// claims Approver reads in the ID token only when asked (such as
	// "groups").
	Scopes []string
	// Approver says which approver the person with claims, their ID
	// token's, is, if any. Nil makes nobody one: every sign-in through the
	// provider is refused.
	Approver func(claims map[string]any) (approver string, ok bool)
	// Sealing seals the sign-in under way into a cookie the browser brings
	// back: the instances of a fleet share their keys, so the provider may
	// send the person back to any of them. Nil means a key of this process
	// alone.
	Sealing *sealing.Keys
	// HTTPClient talks to the provider; nil means one that gives up after
	// 10 seconds.
	HTTPClient *http.Client
}

// signInCookie carries a sign-in through the provider: sealed, so that it
// can be neither read nor altered; scoped to the redirect's path; Lax, as
// the provider's redirect back is a navigation from another site, which a
// Strict cookie would not come back on.
const (
	signInCookie = "toolgate_approver_signin"
	signInTTL    = 10 * time.Minute
	// signInSealed is the sealed cookie's additional data: a value sealed
	// for anything else with the fleet's key does not open as one.
	signInSealed = "toolgate approval pages: sign-in through the identity provider"
)

// idTokenAlgorithms are the signatures the pages accept on ID tokens, as
// section 22's verifier does on access tokens.
var idTokenAlgorithms = []string{oidc.RS256, oidc.ES256, oidc.EdDSA}

// pendingSignIn is a sign-in under way, in its sealed cookie. State ties
// the provider's redirect to this browser; Nonce, the ID token to this
// sign-in; Verifier is PKCE's, which only the code's rightful holder
// knows; Return is the page the person was on.
type pendingSignIn struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	Return   string    `json:"r"`
	Expires  time.Time `json:"e"`
}

// providerSignIn is a ProviderSignIn at work: the provider, discovered
// once, and the path the handler answers its redirect at.
type providerSignIn struct {
	cfg      ProviderSignIn
	path     string
	secure   bool
	sealing  *sealing.Keys
	client   *http.Client
	mu       sync.Mutex
	provider *oidc.Provider
}

func newProviderSignIn(cfg *ProviderSignIn) *providerSignIn {
	if cfg == nil {
		return nil
	}
	p := &providerSignIn{cfg: *cfg, sealing: cfg.Sealing, client: cfg.HTTPClient}
	if p.client == nil {
		p.client = &http.Client{Timeout: 10 * time.Second}
	}
	if p.sealing == nil {
		p.sealing, _ = sealing.New(sealing.GenerateKey()) // a fresh key is always valid
	}
	if u, err := url.Parse(cfg.RedirectURL); err == nil {
		p.path, p.secure = u.Path, u.Scheme == "https"
		if p.cfg.Name == "" {
			p.cfg.Name = issuerHost(cfg.Issuer)
		}
	}
	if p.path == "" {
		p.path = "/"
	}
	return p
}

// issuerHost names a provider by its issuer's host.
func issuerHost(issuer string) string {
	if u, err := url.Parse(issuer); err == nil && u.Host != "" {
		return u.Host
	}
	return issuer
}

// discover reads the provider's discovery document, once it answers. Its
// key set is fetched as ID tokens need it, with a context that outlives
// the request that first asked.
func (p *providerSignIn) discover() (*oidc.Provider, *oauth2.Config, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.provider == nil {
		pr, err := oidc.NewProvider(oidc.ClientContext(context.Background(), p.client), p.cfg.Issuer)
		if err != nil {
			return nil, nil, err
		}
		p.provider = pr
	}
	return p.provider, &oauth2.Config{
		ClientID:     p.cfg.ClientID,
		ClientSecret: p.cfg.ClientSecret,
		Endpoint:     p.provider.Endpoint(),
		RedirectURL:  p.cfg.RedirectURL,
		Scopes:       append([]string{oidc.ScopeOpenID}, p.cfg.Scopes...),
	}, nil
}

// cookie is the sign-in cookie holding value; maxAge -1 deletes it.
func (p *providerSignIn) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: signInCookie, Value: value, Path: p.path, MaxAge: maxAge,
		HttpOnly: true, Secure: p.secure, SameSite: http.SameSiteLaxMode}
}

// providerSignInName is the page, under the approval pages, that starts
// a sign-in through the provider: GET /approvals/sign-in?next=<page>.
const providerSignInName = "sign-in"

// providerSignInURL starts a sign-in through the provider that comes back
// to the page of r.
func providerSignInURL(r *http.Request) string {
	prefix := httpx.Prefix(r)
	return prefix + httpx.ApprovalPagesPath + "/" + providerSignInName + "?next=" + url.QueryEscape(prefix+r.URL.EscapedPath())
}

// nextPage is the page a sign-in comes back to: next, when it is one of
// the approval pages (no other site, nor another page of this one, which
// would make the sign-in an open redirect), else the list.
func nextPage(r *http.Request, next string) string {
	list := httpx.Prefix(r) + httpx.ApprovalPagesPath
	rest, ok := strings.CutPrefix(next, list)
	if !ok || (rest != "" && (rest[0] != '/' || strings.ContainsAny(rest[1:], "/\\?#%") || rest[1:] == providerSignInName)) {
		return list
	}
	return next
}

// startProviderSignIn sends the person to the provider; they come back
// signed in to the page next names. A link, not a form: the pages'
// Content-Security-Policy lets forms go to this origin alone, and a
// browser holds a form's redirects to it too. Another site that sends a
// person here only has them sign in, as themselves.
func (h *Handler) startProviderSignIn(w http.ResponseWriter, r *http.Request) {
	if h.provider == nil {
		h.render(w, r, http.StatusNotFound, "message", h.pageData(r, nil, "This gateway signs people in with approver keys only"))
		return
	}
	_, oc, err := h.provider.discover()
	if err != nil {
		h.log.WarnContext(r.Context(), "cannot read the identity provider's discovery document", "issuer", h.provider.cfg.Issuer, "error", err)
		h.renderMessage(w, r, http.StatusBadGateway, "The identity provider cannot be reached. Try again, or sign in with your approver key.")
		return
	}
	p := pendingSignIn{State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(),
		Return: nextPage(r, r.URL.Query().Get("next")), Expires: h.clock.Now().Add(signInTTL)}
	b, _ := json.Marshal(p) // a struct of strings and a time
	http.SetCookie(w, h.provider.cookie(h.provider.sealing.SealString(b, []byte(signInSealed)), int(signInTTL/time.Second)))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", oc.AuthCodeURL(p.State, oauth2.S256ChallengeOption(p.Verifier), oidc.Nonce(p.Nonce)))
	w.WriteHeader(http.StatusSeeOther)
}

// The refusals of a sign-in through the provider. A person refused learns
// no more than that: not what their token said, nor what is waiting.
const (
	signInLostWords     = "This sign-in was not started in this browser, or took too long. Sign in again."
	signInRefusedWords  = "The identity provider did not sign you in. Sign in again."
	signInNoApprover    = "You signed in at the identity provider, but you are not an approver of this gateway. Ask its operator, or sign in with an approver key."
	signInFailedWords   = "The gateway could not sign you in. Try again."
	spentSignInIDPrefix = "\x00spent sign-in\x00"
)

// providerCallback answers the provider's redirect back: it checks that
// it ends the sign-in this browser started (state, once), exchanges the
// code with PKCE's verifier, verifies the ID token and its nonce, and
// signs the person in as the approver their claims name.
func (h *Handler) providerCallback(w http.ResponseWriter, r *http.Request) {
	// Whatever comes of it, a sign-in is tried once.
	http.SetCookie(w, h.provider.cookie("", -1))
	p, ok := h.pendingSignIn(r)
	if !ok || subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("state")), []byte(p.State)) != 1 {
		h.refuseSignIn(w, r, http.StatusBadRequest, signInLostWords, "no sign-in under way matches the redirect")
		return
	}
	if e := r.URL.Query().Get("error"); e != "" || r.URL.Query().Get("code") == "" {
		h.refuseSignIn(w, r, http.StatusUnauthorized, signInRefusedWords, "the provider signed no one in: "+e)
		return
	}
	// The state is spent across the fleet before the code is used, so
	// that a redirect sent again, from any browser, signs no one in.
	spent := sessionID(spentSignInIDPrefix + p.State)
	if _, err := h.sessions.Get(r.Context(), spent); err == nil {
		h.refuseSignIn(w, r, http.StatusBadRequest, signInLostWords, "the sign-in's state was used before")
		return
	} else if !errors.Is(err, ErrSessionNotFound) {
		h.failSignIn(w, r, err)
		return
	}
	if err := h.sessions.Create(r.Context(), spent, Session{ExpiresAt: p.Expires}); err != nil {
		h.failSignIn(w, r, err)
		return
	}
	claims, err := h.idTokenClaims(r, p)
	if err != nil {
		h.refuseSignIn(w, r, http.StatusUnauthorized, signInRefusedWords, err.Error())
		return
	}
	approver, ok := "", false
	if h.provider.cfg.Approver != nil {
		approver, ok = h.provider.cfg.Approver(claims)
	}
	if !ok {
		sub, _ := claims["sub"].(string)
		h.log.InfoContext(r.Context(), "approval pages: sign-in refused: the person's claims name no approver", "sub", sub)
		h.renderMessage(w, r, http.StatusForbidden, signInNoApprover)
		return
	}
	token, err := h.startSession(r.Context(), approver)
	if err != nil {
		h.failSignIn(w, r, err)
		return
	}
	http.SetCookie(w, sessionCookieFor(r, token, int(sessionTTL/time.Second)))
	// A page, not a redirect: the session cookie is SameSite=Strict, and a
	// browser does not send it on a redirect that continues the provider's
	// navigation from another site. The page's refresh (and its link) is a
	// navigation from this site, which does.
	data := h.pageData(r, &Session{Approver: approver}, "Signed in as "+approver)
	data.SignedIn, data.Continue = false, p.Return
	h.render(w, r, http.StatusOK, "message", data)
}

// pendingSignIn is the sign-in under way in the request's cookie, if it
// opens and has not expired.
func (h *Handler) pendingSignIn(r *http.Request) (pendingSignIn, bool) {
	c, err := r.Cookie(signInCookie)
	if err != nil {
		return pendingSignIn{}, false
	}
	b, err := h.provider.sealing.OpenString(c.Value, []byte(signInSealed))
	if err != nil {
		return pendingSignIn{}, false
	}
	var p pendingSignIn
	if json.Unmarshal(b, &p) != nil || p.State == "" || !h.clock.Now().Before(p.Expires) ||
		!strings.HasPrefix(p.Return, "/") || strings.HasPrefix(p.Return, "//") {
		return pendingSignIn{}, false
	}
	return p, true
}

// idTokenClaims exchanges the redirect's code for tokens, with the PKCE
// verifier, and returns the claims of the ID token once go-oidc has
// verified it (signature by the provider's keys, issuer, audience the
// pages' client, expiry) and its nonce is this sign-in's.
func (h *Handler) idTokenClaims(r *http.Request, p pendingSignIn) (map[string]any, error) {
	pr, oc, err := h.provider.discover()
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	ctx := oidc.ClientContext(r.Context(), h.provider.client)
	tok, err := oc.Exchange(ctx, r.URL.Query().Get("code"), oauth2.VerifierOption(p.Verifier))
	if err != nil {
		return nil, fmt.Errorf("code exchange: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, errors.New("the token response has no id_token")
	}
	idt, err := pr.Verifier(&oidc.Config{ClientID: h.provider.cfg.ClientID, SupportedSigningAlgs: idTokenAlgorithms}).Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("ID token: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(p.Nonce)) != 1 {
		return nil, errors.New("ID token: its nonce is not this sign-in's")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("ID token: %w", err)
	}
	return claims, nil
}

// refuseSignIn tells the person their sign-in failed, in words that give
// nothing away, and the log why.
func (h *Handler) refuseSignIn(w http.ResponseWriter, r *http.Request, status int, words, why string) {
	h.log.InfoContext(r.Context(), "approval pages: sign-in through the identity provider refused", "reason", why)
	h.renderMessage(w, r, status, words)
}

func (h *Handler) failSignIn(w http.ResponseWriter, r *http.Request, err error) {
	h.logError(r, err)
	h.renderMessage(w, r, http.StatusInternalServerError, signInFailedWords)
}
