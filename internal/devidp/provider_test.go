package devidp_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/devidp"
	"github.com/toolgate/toolgate/oauth"
)

const audience = "http://127.0.0.1:8080/mcp"

const usersFile = `{
  "audience": "http://127.0.0.1:8080/mcp",
  "users": [
    {"id": "ann", "groups": ["search"]},
    {"id": "lee", "password": "lee-password", "groups": ["search", "leads"], "scopes": ["toolgate:call", "toolgate:approve"]}
  ],
  "clients": [
    {"id": "toolgate-pages", "secret": "pages-secret", "redirectUris": ["http://127.0.0.1:8080/approvals/oauth/callback"]},
    {"id": "cli", "redirectUris": ["http://127.0.0.1:9999/callback"]},
    {"id": "ci-bot", "secret": "ci-secret", "groups": ["search"]}
  ]
}`

// start serves a provider of usersFile on loopback.
func start(t *testing.T) *devidp.Provider {
	t.Helper()
	users, err := devidp.ParseUsers([]byte(usersFile))
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(nil)
	p, err := devidp.New("http://"+srv.Listener.Addr().String(), users, nil)
	require.NoError(t, err)
	srv.Config.Handler = p
	srv.Start()
	t.Cleanup(srv.Close)
	return p
}

// verify checks a token as toolgate does, with a budget matching the
// search group, and returns what it grants.
func verify(t *testing.T, p *devidp.Provider, token string) (principal, approver string, groups []string) {
	t.Helper()
	v, err := oauth.New(&oauth.Config{Issuer: p.Issuer(), Audience: audience, ApproverClaim: "sub",
		BudgetClaims: map[string][]string{"groups": {"search", "leads"}}})
	require.NoError(t, err)
	g, err := v.VerifyToken(context.Background(), token)
	require.NoError(t, err)
	return g.Principal, g.Approver, g.Claims["groups"]
}

// claims reads a JWT's claims; its signature is the verifier's business.
func claims(t *testing.T, token string) map[string]any {
	t.Helper()
	jws, err := jose.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	var c map[string]any
	require.NoError(t, json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &c))
	return c
}

func postForm(t *testing.T, endpoint string, form url.Values, user, secret string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, secret)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out map[string]any
	require.NoError(t, json.Unmarshal(body, &out), "%s", body)
	return resp.StatusCode, out
}

func TestPrintedTokensAreAcceptedByToolgate(t *testing.T) {
	t.Parallel()
	p := start(t)
	tokens, err := p.Tokens(context.Background())
	require.NoError(t, err)
	var vars []string
	for _, tok := range tokens {
		vars = append(vars, tok.Var)
	}
	assert.Equal(t, []string{"ANN_TOKEN", "LEE_TOKEN", "CI_BOT_TOKEN"}, vars, "a token per user and per service, in the file's order")

	principal, approver, groups := verify(t, p, tokens[0].AccessToken)
	assert.Equal(t, "ann", principal)
	assert.Empty(t, approver, "ann has the call scope only")
	assert.Equal(t, []string{"search"}, groups)
	principal, approver, groups = verify(t, p, tokens[1].AccessToken)
	assert.Equal(t, []string{"lee", "lee"}, []string{principal, approver}, "lee may call and approve")
	assert.ElementsMatch(t, []string{"search", "leads"}, groups)
}

func TestClientCredentialsAndTokenExchange(t *testing.T) {
	t.Parallel()
	p := start(t)
	status, out := postForm(t, p.TokenURL(), url.Values{"grant_type": {"client_credentials"}}, "ci-bot", "ci-secret")
	require.Equal(t, http.StatusOK, status, "%v", out)
	bot := out["access_token"].(string)
	principal, _, groups := verify(t, p, bot)
	assert.Equal(t, "ci-bot", principal)
	assert.Equal(t, []string{"search"}, groups)

	status, out = postForm(t, p.TokenURL(), url.Values{"grant_type": {"client_credentials"}}, "ci-bot", "wrong")
	assert.Equal(t, http.StatusUnauthorized, status, "a wrong secret: %v", out)

	// ci-bot exchanges ann's token for one an upstream takes: ann's, for
	// the upstream's audience.
	tokens, err := p.Tokens(context.Background())
	require.NoError(t, err)
	exchange := url.Values{
		"grant_type":         {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":      {tokens[0].AccessToken},
		"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"audience":           {"https://search.example.com"},
		"scope":              {"search:read"},
	}
	status, out = postForm(t, p.TokenURL(), exchange, "ci-bot", "ci-secret")
	require.Equal(t, http.StatusOK, status, "%v", out)
	assert.Equal(t, "urn:ietf:params:oauth:token-type:access_token", out["issued_token_type"])
	c := claims(t, out["access_token"].(string))
	assert.Equal(t, "ann", c["sub"], "on behalf of ann")
	assert.Equal(t, []any{"https://search.example.com"}, c["aud"])
	assert.Equal(t, []any{"search"}, c["groups"])
	assert.Equal(t, "search:read", c["scope"])

	exchange.Del("audience")
	status, out = postForm(t, p.TokenURL(), exchange, "ci-bot", "ci-secret")
	assert.Equal(t, http.StatusBadRequest, status, "an exchange names its audience: %v", out)
	exchange.Set("audience", "https://search.example.com")
	exchange.Set("subject_token", "not-a-token")
	status, out = postForm(t, p.TokenURL(), exchange, "ci-bot", "ci-secret")
	assert.Equal(t, http.StatusBadRequest, status, "a token it did not issue: %v", out)
}

// signIn drives the authorization code grant as a browser does, up to
// the redirect back to the client, and returns the redirect's query.
func signIn(t *testing.T, p *devidp.Provider, clientID, redirect, challenge string, login url.Values) (int, url.Values) {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"client_id": {clientID}, "redirect_uri": {redirect}, "response_type": {"code"},
		"scope": {"openid toolgate:call"}, "state": {"st-1"}, "nonce": {"n-1"}}
	if challenge != "" {
		q.Set("code_challenge", challenge)
		q.Set("code_challenge_method", "S256")
	}
	resp, err := noFollow.Get(p.Issuer() + "/authorize?" + q.Encode())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := resp.Location()
	require.NoError(t, err)
	if loc.Path != "/login" {
		return 0, loc.Query() // refused: back to the client with an error
	}
	resp, err = http.Get(loc.String())
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(page), `value="ann"`, "ann, who has no password, is a button")
	assert.NotContains(t, string(page), `value="lee"`, "lee signs in with a password")

	login.Set("id", loc.Query().Get("id"))
	resp, err = noFollow.PostForm(loc.String(), login)
	require.NoError(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return resp.StatusCode, nil
	}
	cb, err := resp.Location()
	require.NoError(t, err)
	resp, err = noFollow.Get(cb.String())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	back, err := resp.Location()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(back.String(), redirect), "back to the client: %s", back)
	return http.StatusFound, back.Query()
}

func pkce(t *testing.T) (verifier, challenge string) {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func TestAuthorizationCodeWithPKCE(t *testing.T) {
	t.Parallel()
	p := start(t)
	const pagesRedirect = "http://127.0.0.1:8080/approvals/oauth/callback"

	t.Run("a confidential client, lee with a password", func(t *testing.T) {
		verifier, challenge := pkce(t)
		status, back := signIn(t, p, "toolgate-pages", pagesRedirect, challenge, url.Values{"username": {"lee"}, "password": {"lee-password"}})
		require.Equal(t, http.StatusFound, status)
		assert.Equal(t, "st-1", back.Get("state"))
		code := back.Get("code")
		require.NotEmpty(t, code, "%v", back)
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {pagesRedirect}, "code_verifier": {"wrong" + verifier}}
		st, out := postForm(t, p.TokenURL(), form, "toolgate-pages", "pages-secret")
		require.Equal(t, http.StatusBadRequest, st, "a wrong verifier: %v", out)
		form.Set("code_verifier", verifier)
		st, out = postForm(t, p.TokenURL(), form, "toolgate-pages", "pages-secret")
		require.Equal(t, http.StatusOK, st, "%v", out)
		id := claims(t, out["id_token"].(string))
		assert.Equal(t, "lee", id["sub"])
		assert.Equal(t, "n-1", id["nonce"])
		assert.Contains(t, id["aud"], "toolgate-pages")
		assert.ElementsMatch(t, []any{"search", "leads"}, id["groups"], "the ID token says who lee is")
		principal, _, _ := verify(t, p, out["access_token"].(string))
		assert.Equal(t, "lee", principal, "the access token is for toolgate")
		st, out = postForm(t, p.TokenURL(), form, "toolgate-pages", "pages-secret")
		assert.Equal(t, http.StatusBadRequest, st, "a code is good once: %v", out)
	})

	t.Run("a public client, ann by choosing her", func(t *testing.T) {
		verifier, challenge := pkce(t)
		status, back := signIn(t, p, "cli", "http://127.0.0.1:9999/callback", challenge, url.Values{"username": {"ann"}})
		require.Equal(t, http.StatusFound, status)
		form := url.Values{"grant_type": {"authorization_code"}, "code": {back.Get("code")}, "client_id": {"cli"},
			"redirect_uri": {"http://127.0.0.1:9999/callback"}, "code_verifier": {verifier}}
		st, out := postForm(t, p.TokenURL(), form, "", "")
		require.Equal(t, http.StatusOK, st, "%v", out)
		principal, _, groups := verify(t, p, out["access_token"].(string))
		assert.Equal(t, "ann", principal)
		assert.Equal(t, []string{"search"}, groups)

		// A native app's loopback redirect may be on any port (RFC 8252).
		_, challenge = pkce(t)
		status, back = signIn(t, p, "cli", "http://127.0.0.1:5555/callback", challenge, url.Values{"username": {"ann"}})
		require.Equal(t, http.StatusFound, status)
		assert.NotEmpty(t, back.Get("code"), "%v", back)
	})

	t.Run("refused", func(t *testing.T) {
		_, back := signIn(t, p, "cli", "http://127.0.0.1:9999/callback", "", nil)
		assert.Equal(t, "invalid_request", back.Get("error"), "no PKCE: %v", back)
		_, challenge := pkce(t)
		status, _ := signIn(t, p, "toolgate-pages", pagesRedirect, challenge, url.Values{"username": {"lee"}, "password": {"nope"}})
		assert.Equal(t, http.StatusUnauthorized, status, "a wrong password")
		status, _ = signIn(t, p, "toolgate-pages", pagesRedirect, challenge, url.Values{"username": {"lee"}})
		assert.Equal(t, http.StatusUnauthorized, status, "lee without her password")
	})
}

func TestParseUsersRefusesMistakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, want string }{
		{`{"users": [{"id": "ann"}]}`, "audience: is required"},
		{`{"audience": "a", "users": []}`, "users: no users and no clients"},
		{`{"audience": "a", "users": [{"id": "ann"}, {"id": "ann"}]}`, `users[1].id: "ann" is users[0] already`},
		{`{"audience": "a", "users": [{"id": "ci-bot"}], "clients": [{"id": "ci_bot", "secret": "s"}]}`, `clients[0].id: "ci_bot" would print its token in CI_BOT_TOKEN`},
		{`{"audience": "a", "users": [{"id": "a b"}]}`, "users[0].id: must be a subject"},
		{`{"audience": "a", "clients": [{"id": "c"}]}`, "clients[0]: needs a secret"},
		{`{"audience": "a", "users": [{"id": "ann", "claims": {"sub": "bob"}}]}`, `users[0].claims["sub"]: is set by the provider itself`},
		{`{"audience": "a", "users": [{"id": "ann", "scopes": ["a b"]}]}`, "users[0].scopes[0]: must be one scope"},
		{`{"audience": "a", "users": [{"id": "ann", "group": ["x"]}]}`, `unknown field "group"`},
	} {
		_, err := devidp.ParseUsers([]byte(tc.file))
		require.Error(t, err, tc.file)
		assert.Contains(t, err.Error(), tc.want, tc.file)
	}
}

func TestCheckLoopback(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{
		"127.0.0.1:8090": true, "127.0.0.1:0": true, "[::1]:8090": true, "localhost:8090": true, "127.1.2.3:80": true,
		"0.0.0.0:8090": false, ":8090": false, "[::]:8090": false, "192.168.1.20:8090": false, "example.com:8090": false, "8090": false,
	} {
		err := devidp.CheckLoopback(addr)
		assert.Equal(t, ok, err == nil, "%s: %v", addr, err)
	}
}

// TestKeyFromFileOutlivesARestart: a provider given the same key file
// signs tokens that the next one's key set verifies.
func TestKeyFromFileOutlivesARestart(t *testing.T) {
	t.Parallel()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key.pem")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))

	users, err := devidp.ParseUsers([]byte(usersFile))
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(nil)
	issuer := "http://" + srv.Listener.Addr().String()
	key, err := devidp.LoadKey(path)
	require.NoError(t, err)
	before, err := devidp.New(issuer, users, &devidp.Config{Key: key})
	require.NoError(t, err)
	tokens, err := before.Tokens(context.Background())
	require.NoError(t, err)

	key, err = devidp.LoadKey(path)
	require.NoError(t, err)
	after, err := devidp.New(issuer, users, &devidp.Config{Key: key})
	require.NoError(t, err)
	srv.Config.Handler = after
	srv.Start()
	t.Cleanup(srv.Close)
	principal, _, _ := verify(t, after, tokens[0].AccessToken)
	assert.Equal(t, "ann", principal)

	require.NoError(t, os.WriteFile(path, []byte("not a key"), 0o600))
	_, err = devidp.LoadKey(path)
	assert.ErrorContains(t, err, "no PEM block")
}
