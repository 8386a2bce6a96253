package testidp

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The authorization code flow: people sign in at the provider's login
// form, as a browser drives it, and web clients get their ID tokens. The
// example storage of zitadel's op package has users and clients of its
// own, fixed; the methods below take the flow over for this provider's
// users and web clients, and leave everything else to it.

// User is a person who signs in at the provider's login form.
type User struct {
	// Subject is the sub of their ID tokens.
	Subject string
	// Username and Password are what the login form takes.
	Username, Password string
	// Claims are added to their ID tokens.
	Claims map[string]any
	// Nonce, when set, is the nonce of their ID tokens instead of the one
	// the sign-in asked for, as a provider that mixed two sign-ins up
	// would: the relying party must refuse them.
	Nonce string
}

// WebClient is a client that signs people in by the authorization code
// flow. The provider requires PKCE (S256) of it, and authenticates it with
// its Secret, in the Authorization header or the form.
type WebClient struct {
	ID, Secret   string
	RedirectURIs []string
}

// LoginPath is where the provider's login form is served.
const LoginPath = "/login"

// AddUser registers u.
func (p *Provider) AddUser(u User) {
	f := p.store.codeFlow()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[u.Username] = &u
}

// AddWebClient registers c.
func (p *Provider) AddWebClient(c WebClient) {
	f := p.store.codeFlow()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.webClients[c.ID] = &webClient{c: c, issuer: p.Issuer}
}

// Logins is how many people signed in at the login form.
func (p *Provider) Logins() int {
	f := p.store.codeFlow()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.logins
}

// codeFlow is the state of the authorization code flow: users, web
// clients, and the sign-ins under way, by id and by code.
type codeFlow struct {
	mu         sync.Mutex
	users      map[string]*User
	webClients map[string]*webClient
	requests   map[string]*authRequest
	codes      map[string]string // code -> request id
	logins     int
}

// codeFlow returns the store's, made on first use so that a provider that
// never signs anyone in carries none.
func (s *store) codeFlow() *codeFlow {
	s.codeFlowOnce.Do(func() {
		s.flow = &codeFlow{users: map[string]*User{}, webClients: map[string]*webClient{},
			requests: map[string]*authRequest{}, codes: map[string]string{}}
	})
	return s.flow
}

// authRequest is one sign-in under way.
type authRequest struct {
	oidc.AuthRequest
	id       string
	user     *User
	authTime time.Time
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string          { return a.id }
func (a *authRequest) GetACR() string         { return "" }
func (a *authRequest) GetAMR() []string       { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string  { return []string{a.ClientID} }
func (a *authRequest) GetAuthTime() time.Time { return a.authTime }
func (a *authRequest) GetClientID() string    { return a.ClientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	return &oidc.CodeChallenge{Challenge: a.CodeChallenge, Method: a.CodeChallengeMethod}
}
func (a *authRequest) GetNonce() string {
	if a.user != nil && a.user.Nonce != "" {
		return a.user.Nonce
	}
	return a.Nonce
}
func (a *authRequest) GetRedirectURI() string             { return a.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.Scopes }
func (a *authRequest) GetState() string                   { return a.State }
func (a *authRequest) Done() bool                         { return a.user != nil }
func (a *authRequest) GetSubject() string {
	if a.user == nil {
		return ""
	}
	return a.user.Subject
}

func (s *clientStore) GetClientByClientID(ctx context.Context, clientID string) (op.Client, error) {
	f := s.codeFlow()
	f.mu.Lock()
	c, ok := f.webClients[clientID]
	f.mu.Unlock()
	if ok {
		return c, nil
	}
	return s.store.GetClientByClientID(ctx, clientID) // the token exchange's clients (exchange.go)
}

func (s *clientStore) AuthorizeClientIDSecret(ctx context.Context, clientID, clientSecret string) error {
	f := s.codeFlow()
	f.mu.Lock()
	c, ok := f.webClients[clientID]
	f.mu.Unlock()
	if !ok {
		return s.store.AuthorizeClientIDSecret(ctx, clientID, clientSecret)
	}
	if c.c.Secret != clientSecret {
		return errors.New("wrong client secret")
	}
	return nil
}

// CreateAuthRequest starts a sign-in; one without PKCE is refused.
func (s *clientStore) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("this provider requires PKCE (S256)")
	}
	f := s.codeFlow()
	f.mu.Lock()
	defer f.mu.Unlock()
	a := &authRequest{AuthRequest: *req, id: uuid.NewString()}
	f.requests[a.id] = a
	return a, nil
}

func (s *clientStore) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	f := s.codeFlow()
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.requests[id]
	if !ok {
		return nil, errors.New("no such sign-in")
	}
	return a, nil
}

func (s *clientStore) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	f := s.codeFlow()
	f.mu.Lock()
	id, ok := f.codes[code]
	f.mu.Unlock()
	if !ok {
		return nil, errors.New("code invalid or used")
	}
	return s.AuthRequestByID(ctx, id)
}

func (s *clientStore) SaveAuthCode(_ context.Context, id, code string) error {
	f := s.codeFlow()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes[code] = id
	return nil
}

// DeleteAuthRequest ends a sign-in once its tokens are issued: its code
// then works once.
func (s *clientStore) DeleteAuthRequest(_ context.Context, id string) error {
	f := s.codeFlow()
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.requests, id)
	for code, rid := range f.codes {
		if rid == id {
			delete(f.codes, code)
		}
	}
	return nil
}

// SetUserinfoFromRequest puts a user's subject and claims in their ID
// token.
func (s *clientStore) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	a, ok := req.(*authRequest)
	if !ok || a.user == nil {
		return s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes)
	}
	info.Subject = a.user.Subject
	for k, v := range a.user.Claims {
		info.AppendClaims(k, v)
	}
	return nil
}

// loginForm is the provider's login page: a username and a password.
var loginForm = template.Must(template.New("login").Parse(`<!doctype html>
<html><head><title>Sign in to the test provider</title></head><body>
<h1>Sign in to the test provider</h1>
{{if .Error}}<p role="alert">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="id" value="{{.ID}}">
<label for="username">Username</label> <input id="username" name="username">
<label for="password">Password</label> <input id="password" name="password" type="password">
<button type="submit">Sign in</button>
</form></body></html>`))

// serveLogin serves the login form, and signs in whoever submits it with
// a user's username and password: the provider then sends the browser on
// to its callback, which gives the client its code.
func (p *Provider) serveLogin(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	id := r.Form.Get("id")
	f := p.store.codeFlow()
	show := func(status int, msg string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_ = loginForm.Execute(w, map[string]string{"Action": p.Issuer + LoginPath, "ID": id, "Error": msg})
	}
	f.mu.Lock()
	a, ok := f.requests[id]
	f.mu.Unlock()
	if !ok {
		show(http.StatusBadRequest, "No such sign-in.")
		return
	}
	if r.Method != http.MethodPost {
		show(http.StatusOK, "")
		return
	}
	f.mu.Lock()
	u, ok := f.users[r.PostForm.Get("username")]
	if ok && u.Password == r.PostForm.Get("password") {
		a.user, a.authTime = u, time.Now()
		f.logins++
	}
	f.mu.Unlock()
	if !ok || a.user == nil {
		show(http.StatusUnauthorized, "Wrong username or password.")
		return
	}
	http.Redirect(w, r, p.Issuer+op.DefaultEndpoints.Authorization.Relative()+"/callback?id="+id, http.StatusFound)
}

// webClient is a WebClient as zitadel's op package sees it.
type webClient struct {
	c      WebClient
	issuer string
}

var _ op.Client = (*webClient)(nil)

func (c *webClient) GetID() string                       { return c.c.ID }
func (c *webClient) RedirectURIs() []string              { return slices.Clone(c.c.RedirectURIs) }
func (c *webClient) PostLogoutRedirectURIs() []string    { return nil }
func (c *webClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *webClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *webClient) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *webClient) GrantTypes() []oidc.GrantType { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c *webClient) LoginURL(id string) string    { return c.issuer + LoginPath + "?id=" + id }
func (c *webClient) AccessTokenType() op.AccessTokenType {
	return op.AccessTokenTypeBearer
}
func (c *webClient) IDTokenLifetime() time.Duration       { return 5 * time.Minute }
func (c *webClient) DevMode() bool                        { return false }
func (c *webClient) IsScopeAllowed(string) bool           { return true }
func (c *webClient) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *webClient) ClockSkew() time.Duration             { return 0 }
func (c *webClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *webClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
