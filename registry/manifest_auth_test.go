package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/tokenexchange"
	"github.com/toolgate/toolgate/registry"
)

func exchangeDoc(t *testing.T) map[string]any {
	doc := manifestDoc(t)
	doc["auth"] = map[string]any{"tokenExchange": map[string]any{
		"tokenUrl": "https://idp.example/token", "audience": "https://acme.example", "scope": "air:read",
		"clientId": "gateway", "clientSecret": map[string]any{"env": "ACME_API_KEY"}}}
	return doc
}

// A manifest's token exchange is read with its client secret; the provider
// is sent the exchanged token in place of the credential, which stays for
// key callers.
func TestManifestTokenExchange(t *testing.T) {
	t.Parallel()
	tool := parse(t, encode(t, exchangeDoc(t)))
	te := tool.TokenExchange
	require.NotNil(t, te)
	assert.Equal(t, registry.TokenExchange{Upstream: tool.Slug, TokenURL: "https://idp.example/token", Audience: "https://acme.example",
		Scope: "air:read", ClientID: "gateway", ClientSecret: testSecret, KeyCallers: tool.HTTP.CredentialHeader != ""}, *te)
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", te, te, *te), testSecret)

	input := json.RawMessage(`{"stationId": "S1"}`)
	req, err := tool.BuildRequest(tokenexchange.WithUpstreamToken(context.Background(), "exchanged-token"), "https://acme.example", input)
	require.NoError(t, err)
	assert.Equal(t, "Bearer exchanged-token", req.Header.Get("Authorization"))
	if h := tool.HTTP.CredentialHeader; h != "" && h != "Authorization" {
		assert.Empty(t, req.Header.Get(h), "the key is for key callers")
	}
	digest, err := registry.ManifestOf(tool, tool.Endpoint.Origin).Digest()
	require.NoError(t, err)
	plain := parse(t, encode(t, manifestDoc(t)))
	want, err := registry.ManifestOf(plain, plain.Endpoint.Origin).Digest()
	require.NoError(t, err)
	assert.Equal(t, want, digest, "the exchange is not part of the digest")
}

func TestManifestTokenExchangeMistakes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, path string
		value      any
		wantPath   string
	}{
		{"no tokenUrl", "auth.tokenExchange.tokenUrl", nil, "auth.tokenExchange.tokenUrl: is required"},
		{"no audience", "auth.tokenExchange.audience", nil, "auth.tokenExchange.audience: is required"},
		{"a tokenUrl that is no URL", "auth.tokenExchange.tokenUrl", "idp.example/token", "auth.tokenExchange.tokenUrl"},
		{"an unknown secret", "auth.tokenExchange.clientSecret", map[string]any{"env": "NOT_SET"}, "auth.tokenExchange.clientSecret.env"},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := exchangeDoc(t)
			if c.value == nil {
				deletePath(doc, c.path)
			} else {
				setPath(doc, c.path, c.value)
			}
			_, err := registry.ParseManifest("tool.json", encode(t, doc), parseOpts(nil))
			me := manifestError(t, err)
			assert.Contains(t, me.Error(), c.wantPath)
		})
	}
}
