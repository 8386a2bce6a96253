package oauth

import (
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/toolgate/toolgate/internal/testidp"
)

// BenchmarkVerifyToken is what verifying a token costs the gateway: on
// its first use ("first", the signature checked, for each algorithm) and
// on every later request with it ("remembered", its verification looked
// up by digest). BENCHMARKS.md has the figures.
func BenchmarkVerifyToken(b *testing.B) {
	const audience = "https://toolgate.example/mcp"
	idp := testidp.Start(b, audience)
	idp.AddClient(testidp.Client{ID: "agent", Secret: "s", Scopes: []string{DefaultCallScope}})
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA} {
		idp.Rotate(alg)
		v, err := New(&Config{Issuer: idp.Issuer, Audience: audience})
		if err != nil {
			b.Fatal(err)
		}
		token := idp.Token(b, "agent")
		if _, err := v.VerifyToken(b.Context(), token); err != nil {
			b.Fatal(err)
		}
		b.Run("first/"+string(alg), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.verified.reset()
				if _, err := v.VerifyToken(b.Context(), token); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("remembered/"+string(alg), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.VerifyToken(b.Context(), token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
