package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/toolgatetype"
)

const tokenAudience = "https://toolgate.example/mcp"

// withTokens serves a's gateway again, accepting the access tokens of a
// real identity provider beside a's API keys: agent-1 may call, pat may
// approve for alice.
func withTokens(t *testing.T, a *api) *testidp.Provider {
	t.Helper()
	idp := testidp.Start(t, tokenAudience)
	idp.AddClient(testidp.Client{ID: "agent-1", Secret: "s", Scopes: []string{oauth.DefaultCallScope}})
	idp.AddClient(testidp.Client{ID: "pat", Secret: "s", Scopes: []string{oauth.DefaultApproveScope}, Claims: map[string]any{"approver": "pat"}})
	idp.AddClient(testidp.Client{ID: "nobody", Secret: "s", Scopes: []string{"openid"}})
	// The claims the tests' budgets match people by; a server passes its
	// budgets' (oauth.BudgetClaims).
	v, err := oauth.New(&oauth.Config{Issuer: idp.Issuer, Audience: tokenAudience, ApproverClaim: "approver",
		BudgetClaims: map[string][]string{"groups": {"search"}}})
	require.NoError(t, err)
	a.srv.Close()
	// These tests send many refused tokens from one address; limiting
	// them is authlimit's to test.
	unlimited, err := authlimit.New(&authlimit.Config{Failures: -1})
	require.NoError(t, err)
	a.srv = httptest.NewServer(httpapi.NewHandler(a.gw, &httpapi.Options{Authenticator: a.keys, Tokens: v, AuthLimit: unlimited}))
	t.Cleanup(a.srv.Close)
	a.client = a.srv.Client()
	return idp
}

const resourceMetadata = `resource_metadata="https://toolgate.example/.well-known/oauth-protected-resource/mcp"`

func TestAccessTokenCallsOverHTTP(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil, func(c *toolgate.Config) {
		c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"pat": {"agent-1"}}}
	})
	idp := withTokens(t, a)
	token := idp.Token(t, "agent-1")

	q := a.quote(token, "earthquake-search")
	r := a.call(token, "earthquake-search", "token-1", callBody(q, quakeInput))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"])
	got := a.do("GET", "/v1/executions/"+r.json(t)["id"].(string), token, "")
	assert.Equal(t, http.StatusOK, got.status, "the token's subject is the principal that called")

	// The approver's token reads the executions of the principals it
	// approves for; a caller's token is no approver's.
	pat := idp.Token(t, "pat")
	list := a.do("GET", "/v1/executions?principal=agent-1", pat, "")
	require.Equal(t, http.StatusOK, list.status, "%s", list.body)
	assert.Len(t, list.json(t)["executions"], 1)
	assert.Equal(t, http.StatusOK, a.do("GET", "/v1/approval-requests", pat, "").status)

	refused := a.do("GET", "/v1/approval-requests", token, "")
	assert.Equal(t, http.StatusForbidden, refused.status)
	assert.Equal(t, "insufficient_scope", refused.errorCode(t))
	assert.Equal(t, `Bearer error="insufficient_scope", scope="toolgate:approve", `+resourceMetadata, refused.header.Get("WWW-Authenticate"))

	refused = a.do("POST", "/v1/tools/earthquake-search/quote", pat, "{}")
	assert.Equal(t, http.StatusForbidden, refused.status, "an approver's token cannot call")
	assert.Equal(t, `Bearer error="insufficient_scope", scope="toolgate:call", `+resourceMetadata, refused.header.Get("WWW-Authenticate"))
	refused = a.do("POST", "/v1/tools/earthquake-search/quote", idp.Token(t, "nobody"), "{}")
	assert.Equal(t, "insufficient_scope", refused.errorCode(t))

	// API keys work as before.
	assert.Equal(t, http.StatusCreated, a.do("POST", "/v1/tools/earthquake-search/quote", aliceKey, "{}").status)
}

func TestRefusalsNameTheResourceMetadata(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	idp := withTokens(t, a)

	none := a.do("POST", "/v1/tools/earthquake-search/quote", "", "{}")
	assert.Equal(t, http.StatusUnauthorized, none.status)
	assert.Equal(t, "Bearer "+resourceMetadata, none.header.Get("WWW-Authenticate"), "no credential: where to get one")

	wrongKey := a.do("GET", "/v1/approval-requests", "tg_no_such_key", "")
	assert.Equal(t, http.StatusUnauthorized, wrongKey.status)
	assert.Equal(t, `Bearer error="invalid_token", `+resourceMetadata, wrongKey.header.Get("WWW-Authenticate"))

	for _, bad := range idp.BadTokens(t, "agent-1") {
		t.Run(bad.Name, func(t *testing.T) {
			for _, path := range []string{"/v1/spend", "/v1/approval-requests"} {
				r := a.do("GET", path, bad.Token, "")
				assert.Equal(t, http.StatusUnauthorized, r.status, path)
				assert.Equal(t, "unauthorized", r.errorCode(t))
				challenge := r.header.Get("WWW-Authenticate")
				assert.Regexp(t, `^Bearer error="invalid_token", error_description="[^"]*`+bad.Reason, challenge)
				assert.Contains(t, challenge, resourceMetadata)
				assert.NotContains(t, string(r.body), bad.Token)
			}
		})
	}
}
