package oauth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/oauth"
)

func TestMetadataURLFollowsTheResource(t *testing.T) {
	t.Parallel()
	for resource, want := range map[string]string{
		"https://toolgate.example/mcp":       "https://toolgate.example/.well-known/oauth-protected-resource/mcp",
		"https://toolgate.example":           "https://toolgate.example/.well-known/oauth-protected-resource",
		"https://toolgate.example/":          "https://toolgate.example/.well-known/oauth-protected-resource",
		"http://127.0.0.1:8080/gateway/mcp/": "http://127.0.0.1:8080/.well-known/oauth-protected-resource/gateway/mcp",
	} {
		assert.Equal(t, want, oauth.MetadataURL(resource), resource)
	}
}

func TestMetadataHandlerNamesTheIssuerAndScopes(t *testing.T) {
	t.Parallel()
	v, err := oauth.New(&oauth.Config{Issuer: "https://idp.example", Audience: "https://toolgate.example/gateway/mcp", CallScope: "tg.call"})
	require.NoError(t, err)
	assert.Equal(t, "https://toolgate.example/.well-known/oauth-protected-resource/gateway/mcp", v.ResourceMetadataURL())
	h := v.MetadataHandler("/mcp")
	for path, status := range map[string]int{
		"/.well-known/oauth-protected-resource":             http.StatusOK,
		"/.well-known/oauth-protected-resource/mcp":         http.StatusOK,
		"/.well-known/oauth-protected-resource/gateway/mcp": http.StatusOK,
		"/.well-known/oauth-protected-resource/other":       http.StatusNotFound,
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, status, w.Code, path)
		if status != http.StatusOK {
			continue
		}
		assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"), "public, for browser-based clients too")
		var doc map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &doc))
		assert.Equal(t, "https://toolgate.example/gateway/mcp", doc["resource"])
		assert.Equal(t, []any{"https://idp.example"}, doc["authorization_servers"])
		assert.Equal(t, []any{"tg.call", "toolgate:approve"}, doc["scopes_supported"])
		assert.Equal(t, []any{"header"}, doc["bearer_methods_supported"])
	}
}
