package oauth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/toolgatetest"
)

const audience = "https://toolgate.example/mcp"

// provider starts an identity provider with the clients the tests use:
// agent-1 may call, pat may approve (as approver "pat"), both may do
// either, and one may do neither.
func provider(t *testing.T) *testidp.Provider {
	t.Helper()
	idp := testidp.Start(t, audience)
	idp.AddClient(testidp.Client{ID: "agent-1", Secret: "s1", Scopes: []string{oauth.DefaultCallScope}})
	idp.AddClient(testidp.Client{ID: "pat-client", Secret: "s2", Subject: "pat-uuid", Scopes: []string{oauth.DefaultApproveScope},
		Claims: map[string]any{"toolgate_approver": "pat"}})
	idp.AddClient(testidp.Client{ID: "both", Secret: "s3", Scopes: []string{oauth.DefaultCallScope, oauth.DefaultApproveScope},
		Claims: map[string]any{"toolgate_approver": "pat"}})
	idp.AddClient(testidp.Client{ID: "no-scope", Secret: "s4", Scopes: []string{"openid"}})
	return idp
}

func newVerifier(t *testing.T, idp *testidp.Provider, edit func(*oauth.Config)) *oauth.Verifier {
	t.Helper()
	cfg := &oauth.Config{Issuer: idp.Issuer, Audience: audience, ApproverClaim: "toolgate_approver"}
	if edit != nil {
		edit(cfg)
	}
	v, err := oauth.New(cfg)
	require.NoError(t, err)
	return v
}

func TestVerifierAcceptsTheProvidersTokens(t *testing.T) {
	t.Parallel()
	idp := provider(t)
	for _, c := range []struct {
		name string
		edit func(*oauth.Config)
	}{
		{"Discovered", nil},
		{"GivenKeySetURL", func(c *oauth.Config) { c.JWKSURL = idp.KeysURL() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newVerifier(t, idp, c.edit)
			ctx := context.Background()
			g, err := v.VerifyToken(ctx, idp.Token(t, "agent-1"))
			require.NoError(t, err)
			assert.Equal(t, apikey.TokenGrant{Principal: "agent-1"}, scopesOf(g))

			g, err = v.VerifyToken(ctx, idp.Token(t, "pat-client"))
			require.NoError(t, err)
			assert.Equal(t, apikey.TokenGrant{Approver: "pat"}, scopesOf(g), "the approve scope and the approver claim make an approver")

			g, err = v.VerifyToken(ctx, idp.Token(t, "both"))
			require.NoError(t, err)
			assert.Equal(t, apikey.TokenGrant{Principal: "both", Approver: "pat"}, scopesOf(g))

			g, err = v.VerifyToken(ctx, idp.Token(t, "no-scope"))
			require.NoError(t, err, "a token without the scopes is valid, and grants nothing")
			assert.Equal(t, apikey.TokenGrant{}, scopesOf(g))

			g, err = v.VerifyToken(ctx, idp.Token(t, "both", oauth.DefaultCallScope))
			require.NoError(t, err)
			assert.Equal(t, apikey.TokenGrant{Principal: "both"}, scopesOf(g), "only the scopes granted count")
		})
	}
	assert.Equal(t, int64(1), idp.Discoveries(), "only the verifier without a key set URL discovers it")
}

func TestVerifierAcceptsEveryAllowedAlgorithm(t *testing.T) {
	t.Parallel()
	idp := provider(t)
	clock := toolgatetest.NewFakeClock(time.Now())
	v := newVerifier(t, idp, func(c *oauth.Config) { c.Clock = clock })
	for _, alg := range []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA, jose.RS256} {
		idp.Rotate(alg)
		clock.Advance(oauth.MinRefreshInterval + time.Second)
		token := idp.Token(t, "agent-1")
		header := testidp.Segment(t, token, 0)
		assert.Equal(t, string(alg), header["alg"])
		g, err := v.VerifyToken(context.Background(), token)
		require.NoError(t, err, "%s", alg)
		assert.Equal(t, "agent-1", g.Principal)
	}
}

func TestVerifierRefusesBadTokens(t *testing.T) {
	t.Parallel()
	idp := provider(t)
	v := newVerifier(t, idp, nil)
	ctx := context.Background()

	good := idp.Token(t, "agent-1")
	_, err := v.VerifyToken(ctx, good)
	require.NoError(t, err)
	signing := idp.SigningKey()
	claims := testidp.Segment(t, good, 1)
	bad := append(idp.BadTokens(t, "agent-1"), []testidp.BadToken{
		{Name: "TamperedSignature", Token: flipSignature(good), Reason: "signature does not verify"},
		{Name: "NoExp", Token: testidp.SignedBy(t, signing, without(claims, "exp")), Reason: "no exp"},
		{Name: "NoSubject", Token: testidp.SignedBy(t, signing, without(claims, "sub")), Reason: "names no principal"},
		{Name: "TemplateAsSubject", Token: testidp.SignedBy(t, signing, with(claims, "sub", "*")), Reason: "names no principal"},
		{Name: "NulInSubject", Token: testidp.SignedBy(t, signing, with(claims, "sub", "agent\x00-1")), Reason: "its sub claim holds the control character U+0000"},
		{Name: "EscapeInSubject", Token: testidp.SignedBy(t, signing, with(claims, "sub", "\x1b[31magent")), Reason: "its sub claim holds the control character U+001B"},
		{Name: "NotAJWT", Token: "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24", Reason: "not a JWT"},
	}...)
	for _, c := range bad {
		t.Run(c.Name, func(t *testing.T) {
			_, err := v.VerifyToken(ctx, c.Token)
			require.Error(t, err)
			assert.ErrorIs(t, err, apikey.ErrInvalidToken)
			assert.Contains(t, err.Error(), c.Reason)
			assert.NotContains(t, err.Error(), c.Token, "an error never quotes the token")
		})
	}
}

func TestVerifierAcceptsOnlyConfiguredPrincipalsAndApprovers(t *testing.T) {
	t.Parallel()
	idp := provider(t)
	v := newVerifier(t, idp, func(c *oauth.Config) {
		c.Principals = func(id string) bool { return id == "agent-1" }
		c.Approvers = func(id string) bool { return id == "sam" }
	})
	ctx := context.Background()
	g, err := v.VerifyToken(ctx, idp.Token(t, "agent-1"))
	require.NoError(t, err)
	assert.Equal(t, "agent-1", g.Principal)

	_, err = v.VerifyToken(ctx, idp.Token(t, "both"))
	assert.ErrorIs(t, err, apikey.ErrInvalidToken, "its subject is no principal, and pat no approver")
	assert.ErrorContains(t, err, "names no principal of this gateway")
	assert.ErrorContains(t, err, "names no approver of this gateway")
}

func TestVerifierPicksUpARotatedKeyAtMostOnceAMinute(t *testing.T) {
	t.Parallel()
	idp := provider(t)
	clock := toolgatetest.NewFakeClock(time.Now())
	v := newVerifier(t, idp, func(c *oauth.Config) { c.Clock = clock })
	ctx := context.Background()
	_, err := v.VerifyToken(ctx, idp.Token(t, "agent-1"))
	require.NoError(t, err)
	require.Equal(t, int64(1), idp.KeyFetches())

	// The provider rotates; the first token signed with the new key comes
	// within a minute of the last fetch.
	idp.Rotate(jose.ES256)
	clock.Advance(30 * time.Second)
	rotated := idp.Token(t, "agent-1")
	for range 20 {
		_, err = v.VerifyToken(ctx, rotated)
		assert.ErrorIs(t, err, apikey.ErrInvalidToken)
		_, err = v.VerifyToken(ctx, testidp.Forged(t, testidp.Segment(t, rotated, 1)))
		assert.ErrorIs(t, err, apikey.ErrInvalidToken)
	}
	assert.Equal(t, int64(1), idp.KeyFetches(), "unknown kids fetch nothing within the minute")

	clock.Advance(31 * time.Second)
	g, err := v.VerifyToken(ctx, rotated)
	require.NoError(t, err, "the new key is fetched once the minute has passed, without a restart")
	assert.Equal(t, "agent-1", g.Principal)
	assert.Equal(t, int64(2), idp.KeyFetches())

	// Forged tokens with unknown kids, however many, make one fetch a minute.
	clock.Advance(61 * time.Second)
	for range 50 {
		_, err = v.VerifyToken(ctx, testidp.Forged(t, testidp.Segment(t, rotated, 1)))
		assert.ErrorIs(t, err, apikey.ErrInvalidToken)
	}
	assert.Equal(t, int64(3), idp.KeyFetches())

	// Keys an hour old are fetched again, so a key the provider withdrew
	// stops verifying though no token names a new one.
	old := idp.Token(t, "agent-1") // signed with the ES256 key
	idp.Rotate(jose.RS256)
	idp.Retire()
	_, err = v.VerifyToken(ctx, old)
	require.NoError(t, err, "remembered")
	clock.Advance(61 * time.Minute)
	_, err = v.VerifyToken(ctx, old)
	assert.ErrorIs(t, err, apikey.ErrInvalidToken, "the withdrawn key no longer verifies, even for a token verified before")
}

func TestVerifierRemembersATokenOnlyUntilItExpires(t *testing.T) {
	t.Parallel()
	idp := provider(t)
	clock := toolgatetest.NewFakeClock(time.Now())
	v := newVerifier(t, idp, func(c *oauth.Config) { c.Clock = clock })
	token := idp.Token(t, "agent-1") // five minutes
	_, err := v.VerifyToken(context.Background(), token)
	require.NoError(t, err)
	clock.Advance(5*time.Minute + oauth.Leeway - 2*time.Second)
	_, err = v.VerifyToken(context.Background(), token)
	require.NoError(t, err, "within the leeway")
	clock.Advance(3 * time.Second)
	_, err = v.VerifyToken(context.Background(), token)
	assert.ErrorIs(t, err, apikey.ErrInvalidToken)
	assert.ErrorContains(t, err, "expired")
}

func TestVerifierWithoutTheProvidersKeysIsUnavailable(t *testing.T) {
	t.Parallel()
	idp := provider(t)
	token := idp.Token(t, "agent-1")
	v, err := oauth.New(&oauth.Config{Issuer: "http://127.0.0.1:1", Audience: audience})
	require.NoError(t, err)
	_, err = v.VerifyToken(context.Background(), token)
	assert.ErrorIs(t, err, oauth.ErrUnavailable, "the gateway's failure, not the token's")
	assert.False(t, errors.Is(err, apikey.ErrInvalidToken))
	assert.Error(t, v.FetchKeys(context.Background()))
}

func TestNewRefusesUnsafeConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		cfg   oauth.Config
		field string
	}{
		{"NoIssuer", oauth.Config{Audience: audience}, "Issuer"},
		{"PlainHTTPIssuer", oauth.Config{Issuer: "http://idp.example", Audience: audience}, "Issuer"},
		{"IssuerWithQuery", oauth.Config{Issuer: "https://idp.example/?x=1", Audience: audience}, "Issuer"},
		{"NoAudience", oauth.Config{Issuer: "https://idp.example"}, "Audience"},
		{"PlainHTTPKeySet", oauth.Config{Issuer: "https://idp.example", Audience: audience, JWKSURL: "http://idp.example/keys"}, "JWKSURL"},
		{"SameScopes", oauth.Config{Issuer: "https://idp.example", Audience: audience, CallScope: "x", ApproveScope: "x"}, "ApproveScope"},
		{"ScopeWithAQuote", oauth.Config{Issuer: "https://idp.example", Audience: audience, CallScope: `a"b`}, "CallScope"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := oauth.New(&c.cfg)
			var ce *oauth.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, c.field, ce.Field)
		})
	}
	for _, issuer := range []string{"https://idp.example", "http://127.0.0.1:9000", "http://localhost:9000/realms/x", "http://[::1]:9000"} {
		_, err := oauth.New(&oauth.Config{Issuer: issuer, Audience: audience})
		assert.NoError(t, err, issuer)
	}
}

func TestIsJWT(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln": true,
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.":      true, // unsigned: refused as a token
		"tg_live_abc":                               false,
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0":      false,
		"eyJhbGciOiJSUzI1NiJ9..c2ln":                false,
		"eyJ.a.b.c":                                 false,
		"eyJhbGci+iJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln": false,
		"a.b.c": false,
	} {
		assert.Equal(t, want, oauth.IsJWT(s), s)
	}
}

func with(claims map[string]any, name string, value any) map[string]any {
	out := map[string]any{}
	for k, v := range claims {
		out[k] = v
	}
	out[name] = value
	return out
}

func without(claims map[string]any, name string) map[string]any {
	out := with(claims, name, nil)
	delete(out, name)
	return out
}

// flipSignature changes one character of the signature.
func flipSignature(token string) string {
	b := []byte(token)
	i := len(b) - 5
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestVerifierFetchesOnceForManyConcurrentTokens(t *testing.T) {
	t.Parallel()
	idp := provider(t)
	v := newVerifier(t, idp, nil)
	tokens := []string{idp.Token(t, "agent-1"), idp.Token(t, "both")}
	forged := testidp.Forged(t, testidp.Segment(t, tokens[0], 1))
	done := make(chan error, 40)
	for i := range 40 {
		go func() {
			tok := tokens[i%2]
			if i%4 == 3 {
				tok = forged
			}
			_, err := v.VerifyToken(context.Background(), tok)
			if tok == forged && err != nil {
				err = nil
			}
			done <- err
		}()
	}
	for range 40 {
		assert.NoError(t, <-done)
	}
	assert.Equal(t, int64(1), idp.KeyFetches(), "the first tokens wait for one fetch; the forged ones fetch nothing more within the minute")
}

// scopesOf is what g grants, without the claims it carries for budgets.
func scopesOf(g apikey.TokenGrant) apikey.TokenGrant {
	g.Claims, g.RuleClaims = nil, nil
	return g
}
