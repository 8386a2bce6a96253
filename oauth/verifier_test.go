package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
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
			assert.Equal(t, apikey.TokenGrant{Principal: "agent-1"}, g)

			g, err = v.VerifyToken(ctx, idp.Token(t, "pat-client"))
			require.NoError(t, err)
			assert.Equal(t, apikey.TokenGrant{Approver: "pat"}, g, "the approve scope and the approver claim make an approver")

			g, err = v.VerifyToken(ctx, idp.Token(t, "both"))
			require.NoError(t, err)
			assert.Equal(t, apikey.TokenGrant{Principal: "both", Approver: "pat"}, g)

			g, err = v.VerifyToken(ctx, idp.Token(t, "no-scope"))
			require.NoError(t, err, "a token without the scopes is valid, and grants nothing")
			assert.Equal(t, apikey.TokenGrant{}, g)

			g, err = v.VerifyToken(ctx, idp.Token(t, "both", oauth.DefaultCallScope))
			require.NoError(t, err)
			assert.Equal(t, apikey.TokenGrant{Principal: "both"}, g, "only the scopes granted count")
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
		header := decodeSegment(t, token, 0)
		assert.Equal(t, string(alg), header["alg"])
		g, err := v.VerifyToken(context.Background(), token)
		require.NoError(t, err, "%s", alg)
		assert.Equal(t, "agent-1", g.Principal)
	}
}

func TestVerifierRefusesBadTokens(t *testing.T) {
	t.Parallel()
	idp := provider(t)
	idp.AddClient(testidp.Client{ID: "expired", Secret: "x", Scopes: []string{oauth.DefaultCallScope}, Lifetime: -2 * time.Minute})
	idp.AddClient(testidp.Client{ID: "early", Secret: "x", Scopes: []string{oauth.DefaultCallScope}, NotBefore: 5 * time.Minute, Lifetime: 10 * time.Minute})
	idp.AddClient(testidp.Client{ID: "elsewhere", Secret: "x", Scopes: []string{oauth.DefaultCallScope}, Audience: "https://other.example/mcp"})
	impostor := testidp.StartSharingKeys(t, idp)
	impostor.AddClient(testidp.Client{ID: "agent-1", Secret: "s1", Scopes: []string{oauth.DefaultCallScope}})
	v := newVerifier(t, idp, nil)
	ctx := context.Background()

	good := idp.Token(t, "agent-1")
	_, err := v.VerifyToken(ctx, good)
	require.NoError(t, err)
	signing := idp.SigningKey()
	payload := decodeSegment(t, good, 1)

	for _, c := range []struct {
		name, token, reason string
	}{
		{"Expired", idp.Token(t, "expired"), "expired"},
		{"NotYetValid", idp.Token(t, "early"), "not valid before"},
		{"WrongAudience", idp.Token(t, "elsewhere"), "audience"},
		{"WrongIssuer", impostor.Token(t, "agent-1"), "issued by a different provider"},
		{"AlgNone", unsigned(t, signing.KeyID, payload), "unexpected signature algorithm"},
		{"HS256WithThePublicKey", hmacWithPublicKey(t, signing, payload), "unexpected signature algorithm"},
		{"UnknownKid", forged(t, payload), "unknown key"},
		{"TamperedPayload", tampered(t, good), "signature does not verify"},
		{"TamperedSignature", flipSignature(good), "signature does not verify"},
		{"NoExp", signedBy(t, signing, without(payload, "exp")), "no exp"},
		{"NoSubject", signedBy(t, signing, without(payload, "sub")), "names no principal"},
		{"TemplateAsSubject", signedBy(t, signing, with(payload, "sub", "*")), "names no principal"},
		{"NotAJWT", "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24", "not a JWT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.VerifyToken(ctx, c.token)
			require.Error(t, err)
			assert.ErrorIs(t, err, apikey.ErrInvalidToken)
			assert.Contains(t, err.Error(), c.reason)
			assert.NotContains(t, err.Error(), c.token, "an error never quotes the token")
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
		_, err = v.VerifyToken(ctx, forged(t, decodeSegment(t, rotated, 1)))
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
		_, err = v.VerifyToken(ctx, forged(t, decodeSegment(t, rotated, 1)))
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

// decodeSegment decodes the header (0) or payload (1) of a compact JWS.
func decodeSegment(t *testing.T, token string, i int) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[i])
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

func encodeSegment(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(raw)
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

// unsigned is claims with "alg": "none" and no signature.
func unsigned(t *testing.T, kid string, claims map[string]any) string {
	return encodeSegment(t, map[string]string{"alg": "none", "kid": kid, "typ": "JWT"}) + "." + encodeSegment(t, claims) + "."
}

// hmacWithPublicKey signs claims with HS256, using the PEM of the
// provider's public key as the secret: the key confusion attack.
func hmacWithPublicKey(t *testing.T, signing jose.JSONWebKey, claims map[string]any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(signing.Public().Key)
	require.NoError(t, err)
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	return signedBy(t, jose.JSONWebKey{Key: secret, KeyID: signing.KeyID, Algorithm: string(jose.HS256)}, claims)
}

// forged signs claims with a key of its own, under a kid the provider
// never published.
func forged(t *testing.T, claims map[string]any) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return signedBy(t, jose.JSONWebKey{Key: key, KeyID: "forged-" + rand.Text(), Algorithm: string(jose.ES256)}, claims)
}

func signedBy(t *testing.T, key jose.JSONWebKey, claims map[string]any) string {
	t.Helper()
	alg := jose.SignatureAlgorithm(key.Algorithm)
	if _, ok := key.Key.(*rsa.PrivateKey); ok && alg == "" {
		alg = jose.RS256
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	require.NoError(t, err)
	raw, err := json.Marshal(claims)
	require.NoError(t, err)
	jws, err := signer.Sign(raw)
	require.NoError(t, err)
	out, err := jws.CompactSerialize()
	require.NoError(t, err)
	return out
}

// tampered changes the subject of a signed token, keeping its signature.
func tampered(t *testing.T, token string) string {
	parts := strings.Split(token, ".")
	claims := decodeSegment(t, token, 1)
	claims["sub"] = "mallory"
	return parts[0] + "." + encodeSegment(t, claims) + "." + parts[2]
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
