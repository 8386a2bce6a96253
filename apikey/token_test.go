package apikey_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/apikey"
)

func TestBearerCredentialReadsTokensLongerThanKeys(t *testing.T) {
	t.Parallel()
	jwt := "eyJ" + strings.Repeat("a", 1200) + ".b.c"
	for _, c := range []struct {
		name   string
		header string
		want   string
	}{
		{"AToken", "Bearer " + jwt, jwt},
		{"LongestAccepted", "Bearer " + strings.Repeat("k", apikey.MaxTokenLength), strings.Repeat("k", apikey.MaxTokenLength)},
		{"TooLong", "Bearer " + strings.Repeat("k", apikey.MaxTokenLength+1), ""},
		{"AnotherScheme", "Basic " + jwt, ""},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", c.header)
		got, ok := apikey.BearerCredential(r)
		assert.Equal(t, c.want != "", ok, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+jwt)
	_, ok := apikey.BearerToken(r)
	assert.False(t, ok, "too long for an API key")
}

func TestChallenge(t *testing.T) {
	t.Parallel()
	const meta = "https://toolgate.example/.well-known/oauth-protected-resource/mcp"
	assert.Equal(t, `Bearer resource_metadata="`+meta+`"`, apikey.Challenge(meta, "", "", ""))
	assert.Equal(t, `Bearer error="insufficient_scope", scope="toolgate:call", resource_metadata="`+meta+`"`,
		apikey.Challenge(meta, "insufficient_scope", "", "toolgate:call"))
	assert.Equal(t, `Bearer error="invalid_token", error_description="expected audience x got y", resource_metadata="`+meta+`"`,
		apikey.Challenge(meta, "invalid_token", `expected audience "x" got "y"`+"\n", ""), "quotes and controls are dropped")
}
