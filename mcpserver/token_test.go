package mcpserver_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/toolgatetest"
)

const (
	tokenAudience    = "https://toolgate.example/mcp"
	resourceMetadata = `resource_metadata="https://toolgate.example/.well-known/oauth-protected-resource/mcp"`
)

// mcpWithTokens serves gw's MCP handler accepting alice's key and the
// tokens of a real identity provider: agent-1 may call, pat only approve.
func mcpWithTokens(t *testing.T, gw *toolgatetest.Gateway) (string, *testidp.Provider, *testproc.SyncBuffer) {
	t.Helper()
	idp := testidp.Start(t, tokenAudience)
	idp.AddClient(testidp.Client{ID: "agent-1", Secret: "s", Scopes: []string{oauth.DefaultCallScope}})
	idp.AddClient(testidp.Client{ID: "pat", Secret: "s", Scopes: []string{oauth.DefaultApproveScope}, Claims: map[string]any{"approver": "pat"}})
	// The claims the tests' budgets match people by; a server passes its
	// budgets' (oauth.BudgetClaims).
	v, err := oauth.New(&oauth.Config{Issuer: idp.Issuer, Audience: tokenAudience, ApproverClaim: "approver",
		BudgetClaims: map[string][]string{"groups": {"search"}}})
	require.NoError(t, err)
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
	logs := &testproc.SyncBuffer{}
	h, err := mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{Authenticator: keys, Tokens: v, Logger: slogTo(logs)})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return srv.URL + "/mcp", idp, logs
}

func TestHTTPAccessTokenCalls(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	url, idp, logs := mcpWithTokens(t, gw)
	token := idp.Token(t, "agent-1")

	cs := connectHTTP(t, url, token, approves("once"))
	res := call(t, cs, "echo", `{"v":"signed in"}`, nil)
	assert.JSONEq(t, `{"value":"signed in"}`, requireCompleted(t, res))
	_, err := gw.Gateway.GetExecution(t.Context(), "agent-1", executionID(t, res))
	require.NoError(t, err, "the token's subject is the principal that called")

	alice := connectHTTP(t, url, aliceKey, approves("once"))
	requireCompleted(t, call(t, alice, "echo", `{"v":"keyed"}`, nil))
	assert.NotContains(t, logs.String(), token)
}

func TestHTTPRefusesBadAccessTokens(t *testing.T) {
	t.Parallel()
	url, idp, _ := mcpWithTokens(t, toolgatetest.New(t, nil))

	r := send(t, http.MethodPost, url, "", "", initialize)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, "Bearer "+resourceMetadata, r.header.Get("WWW-Authenticate"), "where a client learns to sign in")
	r = send(t, http.MethodPost, url, "Bearer tg_test_nobody", "", initialize)
	assert.Equal(t, `Bearer error="invalid_token", `+resourceMetadata, r.header.Get("WWW-Authenticate"))

	r = send(t, http.MethodPost, url, "Bearer "+idp.Token(t, "pat"), "", initialize)
	assert.Equal(t, http.StatusForbidden, r.status, "an approver's token cannot call")
	assert.Equal(t, `Bearer error="insufficient_scope", scope="toolgate:call", `+resourceMetadata, r.header.Get("WWW-Authenticate"))

	for _, bad := range idp.BadTokens(t, "agent-1") {
		r := send(t, http.MethodPost, url, "Bearer "+bad.Token, "", initialize)
		assert.Equal(t, http.StatusUnauthorized, r.status, bad.Name)
		challenge := r.header.Get("WWW-Authenticate")
		assert.Regexp(t, `^Bearer error="invalid_token", error_description="[^"]*`+bad.Reason, challenge, bad.Name)
		assert.Contains(t, challenge, resourceMetadata, bad.Name)
		assert.Contains(t, string(r.body), `"code":-32600`, bad.Name)
		assert.NotContains(t, string(r.body), bad.Token, bad.Name)
	}
}
