package devidp

import (
	"context"
	"errors"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// authRequestLife bounds how long a sign-in may take, from the client's
// redirect to the code's exchange.
const authRequestLife = 10 * time.Minute

// storage is the provider's state as zitadel's op package asks for it:
// the users file, the signing key, and the sign-ins under way, all in
// memory.
type storage struct {
	subjects     map[string]*subject
	clients      map[string]*Client
	users        map[string]*User
	usersInOrder []User
	audience     string
	key          *signingKey
	lifetime     time.Duration

	mu       sync.Mutex
	requests map[string]*authRequest // by id
	codes    map[string]string       // code -> request id
}

var (
	_ op.Storage                        = (*storage)(nil)
	_ op.ClientCredentialsStorage       = (*storage)(nil)
	_ op.TokenExchangeStorage           = (*storage)(nil)
	_ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)
	_ op.CanSetUserinfoFromRequest      = (*storage)(nil)
)

func newStorage(u *Users, key *signingKey, lifetime time.Duration) *storage {
	s := &storage{
		subjects:     u.subjects(),
		clients:      map[string]*Client{},
		users:        map[string]*User{},
		usersInOrder: u.Users,
		audience:     u.Audience,
		key:          key,
		lifetime:     lifetime,
		requests:     map[string]*authRequest{},
		codes:        map[string]string{},
	}
	for i := range u.Clients {
		s.clients[u.Clients[i].ID] = &u.Clients[i]
	}
	for i := range u.Users {
		s.users[u.Users[i].ID] = &u.Users[i]
	}
	return s
}

// errNotFound is what op reports as not found.
type errNotFound struct{ what string }

func (e errNotFound) Error() string { return e.what + " not found" }
func (errNotFound) IsNotFound()     {}

// authRequest is one sign-in under way: the client's request, and the
// user once signed in.
type authRequest struct {
	id          string
	created     time.Time
	clientID    string
	redirectURI string
	scopes      []string
	state       string
	nonce       string
	resType     oidc.ResponseType
	resMode     oidc.ResponseMode
	challenge   *oidc.CodeChallenge
	audience    []string

	subject  string // "" until signed in
	authTime time.Time
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string                 { return a.audience }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.resType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.resMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.subject != "" }

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE is required: send code_challenge with code_challenge_method S256")
	}
	a := &authRequest{
		id:          uuid.NewString(),
		created:     time.Now(),
		clientID:    req.ClientID,
		redirectURI: req.RedirectURI,
		scopes:      req.Scopes,
		state:       req.State,
		nonce:       req.Nonce,
		resType:     req.ResponseType,
		resMode:     req.ResponseMode,
		challenge:   &oidc.CodeChallenge{Challenge: req.CodeChallenge, Method: req.CodeChallengeMethod},
		// The ID token is for the client, the access token for toolgate:
		// op gives both this audience.
		audience: []string{req.ClientID, s.audience},
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, r := range s.requests { // forget sign-ins abandoned long ago
		if time.Since(r.created) > authRequestLife {
			delete(s.requests, id)
		}
	}
	s.requests[a.id] = a
	return a, nil
}

func (s *storage) request(id string) (*authRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok || time.Since(a.created) > authRequestLife {
		return nil, errNotFound{"sign-in"}
	}
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	return s.request(id)
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	id, ok := s.codes[code]
	s.mu.Unlock()
	if !ok {
		return nil, errNotFound{"code"}
	}
	return s.request(id)
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest ends a sign-in once its code is exchanged: a code
// is good once.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

// signIn marks a sign-in done by user.
func (s *storage) signIn(id, user string) error {
	a, err := s.request(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a.subject, a.authTime = user, time.Now()
	return nil
}

func (s *storage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	return uuid.NewString(), time.Now().Add(s.lifetime), nil
}

var errNoRefresh = errors.New("this provider issues no refresh tokens")

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errNoRefresh
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrRequestNotSupported().WithDescription("tokens here live until they expire")
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return s.key, nil }

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{s.key.alg}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{s.key}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, errNotFound{"client"}
	}
	return &opClient{c: c, lifetime: s.lifetime}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	c, ok := s.clients[id]
	if !ok || c.Secret == "" || c.Secret != secret {
		return errors.New("wrong client id or secret")
	}
	return nil
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil // SetUserinfoFromRequest does it
}

// setUserinfo describes a subject: its sub, name, and groups.
func (s *storage) setUserinfo(info *oidc.UserInfo, sub string) error {
	subj, ok := s.subjects[sub]
	if !ok {
		return errNotFound{"user"}
	}
	info.Subject = sub
	info.PreferredUsername = sub
	if len(subj.groups) > 0 {
		info.AppendClaims("groups", subj.groups)
	}
	for k, v := range subj.claims {
		info.AppendClaims(k, v)
	}
	return nil
}

func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, _ []string) error {
	return s.setUserinfo(info, req.GetSubject())
}

func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, _, sub, _ string) error {
	return s.setUserinfo(info, sub)
}

func (s *storage) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, _, sub, clientID string) error {
	info := new(oidc.UserInfo)
	if err := s.setUserinfo(info, sub); err != nil {
		return err
	}
	resp.SetUserInfo(info)
	resp.ClientID = clientID
	resp.Active = true
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, sub, _ string, scopes []string) (map[string]any, error) {
	subj, ok := s.subjects[sub]
	if !ok {
		return nil, errNotFound{"user"}
	}
	return subj.tokenClaims(subj.grant(scopes)), nil
}

func (s *storage) GetPrivateClaimsFromRequest(ctx context.Context, req op.TokenRequest, _ []string) (map[string]any, error) {
	return s.GetPrivateClaimsFromScopes(ctx, req.GetSubject(), "", req.GetScopes())
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("this provider takes no JWT assertions")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("this provider takes no JWT assertions")
}

func (s *storage) Health(context.Context) error { return nil }

// ClientCredentials checks a client's secret for the client credentials
// grant: its tokens are for itself.
func (s *storage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(ctx, id, secret); err != nil {
		return nil, err
	}
	return s.GetClientByClientID(ctx, id)
}

func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	subj, ok := s.subjects[id]
	if !ok {
		return nil, errNotFound{"client"}
	}
	return &tokenRequest{subject: id, audience: []string{s.audience}, scopes: subj.grant(scopes)}, nil
}

// tokenRequest is a token for a subject of the file, issued by the client
// credentials grant or printed at start.
type tokenRequest struct {
	subject  string
	audience []string
	scopes   []string
}

func (r *tokenRequest) GetSubject() string    { return r.subject }
func (r *tokenRequest) GetAudience() []string { return r.audience }
func (r *tokenRequest) GetScopes() []string   { return r.scopes }

// ValidateTokenExchangeRequest admits an exchange (RFC 8693) by a client
// with a secret of an access token this provider issued, for an access
// token with the audience asked, on behalf of the same subject.
func (s *storage) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	if req.GetRequestedTokenType() == "" {
		req.SetRequestedTokenType(oidc.AccessTokenType)
	}
	if req.GetRequestedTokenType() != oidc.AccessTokenType {
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are issued by exchange")
	}
	if req.GetExchangeSubjectTokenType() != oidc.AccessTokenType {
		return oidc.ErrInvalidRequest().WithDescription("subject_token_type must be an access token")
	}
	if len(req.GetAudience()) == 0 {
		return oidc.ErrInvalidTarget().WithDescription("audience is required: the upstream the token is for")
	}
	if _, ok := s.subjects[req.GetSubject()]; !ok {
		return oidc.ErrInvalidRequest().WithDescription("subject %q is not in the users file", req.GetSubject())
	}
	return nil
}

func (s *storage) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

// GetPrivateClaimsFromTokenExchangeRequest gives the exchanged token the
// subject's groups and claims, and the scopes asked for the upstream.
func (s *storage) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	subj, ok := s.subjects[req.GetSubject()]
	if !ok {
		return nil, errNotFound{"user"}
	}
	return subj.tokenClaims(req.GetScopes()), nil
}

func (s *storage) SetUserinfoFromTokenExchangeRequest(_ context.Context, info *oidc.UserInfo, req op.TokenExchangeRequest) error {
	return s.setUserinfo(info, req.GetSubject())
}

// opClient is a client of the file as op sees it.
type opClient struct {
	c        *Client
	lifetime time.Duration
}

var _ op.Client = (*opClient)(nil)

func (c *opClient) GetID() string                    { return c.c.ID }
func (c *opClient) RedirectURIs() []string           { return c.c.RedirectURIs }
func (c *opClient) PostLogoutRedirectURIs() []string { return nil }

// ApplicationType: a public client is native, whose redirect may be any
// loopback port; a client with a secret is a web application.
func (c *opClient) ApplicationType() op.ApplicationType {
	if c.c.Secret == "" {
		return op.ApplicationTypeNative
	}
	return op.ApplicationTypeWeb
}

func (c *opClient) AuthMethod() oidc.AuthMethod {
	if c.c.Secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}

func (c *opClient) ResponseTypes() []oidc.ResponseType {
	if len(c.c.RedirectURIs) == 0 {
		return nil
	}
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}

func (c *opClient) GrantTypes() []oidc.GrantType {
	var g []oidc.GrantType
	if len(c.c.RedirectURIs) > 0 {
		g = append(g, oidc.GrantTypeCode)
	}
	if c.c.Secret != "" {
		g = append(g, oidc.GrantTypeClientCredentials, oidc.GrantTypeTokenExchange)
	}
	return g
}

func (c *opClient) LoginURL(id string) string            { return loginPath + "?id=" + id }
func (c *opClient) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *opClient) IDTokenLifetime() time.Duration       { return c.lifetime }
func (c *opClient) DevMode() bool                        { return true } // http:// redirects, for loopback
func (c *opClient) IsScopeAllowed(string) bool           { return true } // the user's scopes decide
func (c *opClient) IDTokenUserinfoClaimsAssertion() bool { return true } // groups in the ID token
func (c *opClient) ClockSkew() time.Duration             { return 0 }
func (c *opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
