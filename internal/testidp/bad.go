package testidp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// BadToken is a token a verifier of the provider's tokens must refuse,
// and the words its refusal gives.
type BadToken struct {
	Name, Token, Reason string
}

// BadTokens returns the tokens every verifier of p's tokens for the client
// must refuse: issued by p but expired, not yet valid or for another
// audience; issued by a provider with another issuer that signs with p's
// keys; unsigned ("alg": "none"); HS256 with p's public key as the secret;
// signed by a key p never published; and a good one altered.
func (p *Provider) BadTokens(t testing.TB, client string) []BadToken {
	t.Helper()
	p.store.mu.Lock()
	c := *p.store.clients[client]
	p.store.mu.Unlock()
	variant := func(id string, edit func(*Client)) string {
		v := c
		v.ID = client + "-" + id
		if v.Subject == "" {
			v.Subject = client
		}
		edit(&v)
		p.AddClient(v)
		return p.Token(t, v.ID)
	}
	impostor := StartSharingKeys(t, p)
	impostor.AddClient(c)
	good := p.Token(t, client)
	claims := Segment(t, good, 1)
	signing := p.SigningKey()
	return []BadToken{
		{"Expired", variant("expired", func(v *Client) { v.Lifetime = -2 * time.Minute }), "expired"},
		{"NotYetValid", variant("early", func(v *Client) { v.NotBefore, v.Lifetime = 5*time.Minute, 10*time.Minute }), "not valid before"},
		{"WrongAudience", variant("elsewhere", func(v *Client) { v.Audience = "https://other.example/mcp" }), "audience"},
		{"WrongIssuer", impostor.Token(t, client), "issued by a different provider"},
		{"AlgNone", Unsigned(t, signing.KeyID, claims), "unexpected signature algorithm"},
		{"HS256WithThePublicKey", HMACWithPublicKey(t, signing, claims), "unexpected signature algorithm"},
		{"UnknownKid", Forged(t, claims), "unknown key"},
		{"Tampered", Tampered(t, good), "signature does not verify"},
	}
}

// Segment decodes the header (0) or payload (1) of a compact JWS.
func Segment(t testing.TB, token string, i int) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[i])
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func encodeSegment(t testing.TB, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

// Unsigned is claims under "alg": "none", with no signature.
func Unsigned(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	return encodeSegment(t, map[string]string{"alg": "none", "kid": kid, "typ": "JWT"}) + "." + encodeSegment(t, claims) + "."
}

// HMACWithPublicKey signs claims with HS256 under the kid of signing, with
// the PEM of its public key as the secret: the key confusion attack.
func HMACWithPublicKey(t testing.TB, signing jose.JSONWebKey, claims map[string]any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(signing.Public().Key)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	return SignedBy(t, jose.JSONWebKey{Key: secret, KeyID: signing.KeyID, Algorithm: string(jose.HS256)}, claims)
}

// Forged signs claims with a key of its own, under a kid no provider
// published.
func Forged(t testing.TB, claims map[string]any) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return SignedBy(t, jose.JSONWebKey{Key: key, KeyID: "forged-" + rand.Text(), Algorithm: string(jose.ES256)}, claims)
}

// SignedBy signs claims with key, its kid in the header.
func SignedBy(t testing.TB, key jose.JSONWebKey, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(key.Algorithm), Key: key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Tampered changes the subject of a signed token, keeping its signature.
func Tampered(t testing.TB, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	claims := Segment(t, token, 1)
	claims["sub"] = "mallory"
	return parts[0] + "." + encodeSegment(t, claims) + "." + parts[2]
}
