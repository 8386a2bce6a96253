package httpx

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/apikey"
)

// dottedTokens takes a credential with two dots for a token, as the JWT
// verifier does; it verifies nothing.
type dottedTokens struct{ apikey.TokenVerifier }

func (dottedTokens) IsToken(c string) bool { return strings.Count(c, ".") == 2 }

func TestAccessToken(t *testing.T) {
	t.Parallel()
	long := "a." + strings.Repeat("b", apikey.MaxTokenLength) + ".c"
	for _, tc := range []struct {
		name          string
		authorization []string
		tokens        apikey.TokenVerifier
		want          string // "": not an access token
	}{
		{name: "a token", authorization: []string{"Bearer h.p.s"}, tokens: dottedTokens{}, want: "h.p.s"},
		{name: "the scheme in any case", authorization: []string{"bearer h.p.s"}, tokens: dottedTokens{}, want: "h.p.s"},
		{name: "tokens not accepted", authorization: []string{"Bearer h.p.s"}, tokens: nil},
		{name: "an API key", authorization: []string{"Bearer tg_live_key"}, tokens: dottedTokens{}},
		{name: "no header", tokens: dottedTokens{}},
		{name: "two headers", authorization: []string{"Bearer h.p.s", "Bearer h.p.s"}, tokens: dottedTokens{}},
		{name: "another scheme", authorization: []string{"Basic h.p.s"}, tokens: dottedTokens{}},
		{name: "longer than a token may be", authorization: []string{"Bearer " + long}, tokens: dottedTokens{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequestWithContext(context.Background(), "GET", "/", nil)
			for _, v := range tc.authorization {
				r.Header.Add("Authorization", v)
			}
			got, ok := AccessToken(r, tc.tokens)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.want != "", ok)
		})
	}
}
