package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetype"
)

const oauthSection = `"oauth": {"issuer": "https://idp.example", "audience": "https://toolgate.example/mcp",
	"principalClaim": "sub", "approverClaim": "toolgate_approver",
	"scopes": {"call": "toolgate:call", "approve": "toolgate:approve"}}`

func TestParseConfigOAuth(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{` + oauthSection + `,
		"principals": [
			{"id": "*", "spendControls": {"dailyLimitUsd": "5", "rateLimitPerMinute": 10}, "approvalMode": "caller"},
			{"id": "ci-bot", "spendControls": {"dailyLimitUsd": "50"}},
			{"id": "alice", "apiKeys": ["tg_alice"], "approvalMode": "approver"}
		],
		"approvers": [{"id": "pat", "principals": ["alice", "ci-bot"]}]
	}`))
	require.NoError(t, err)
	assert.Equal(t, &OAuth{Issuer: "https://idp.example", Audience: "https://toolgate.example/mcp", PrincipalClaim: "sub",
		ApproverClaim: "toolgate_approver", CallScope: "toolgate:call", ApproveScope: "toolgate:approve"}, cfg.OAuth)
	require.NotNil(t, cfg.template())
	assert.Equal(t, 10, *cfg.template().SpendControls.RateLimitPerMinute)
	assert.Empty(t, cfg.Approvers[0].Keys, "pat signs in with tokens alone")

	local, err := ParseConfig([]byte(`{"oauth": {"issuer": "http://127.0.0.1:9000/realms/x", "audience": "http://localhost:8080/mcp",
		"jwksUrl": "http://127.0.0.1:9000/realms/x/certs"}, "principals": [{"id": "*"}]}`))
	require.NoError(t, err, "http:// on a loopback address")
	assert.Equal(t, "http://127.0.0.1:9000/realms/x/certs", local.OAuth.JWKSURL)
}

func TestParseConfigOAuthErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, doc, want string
	}{
		{"an issuer over http elsewhere",
			`{"oauth": {"issuer": "http://idp.example", "audience": "https://toolgate.example/mcp"}}`,
			`config: oauth.issuer: "http://idp.example": http:// is allowed only on a loopback address; use https://`},
		{"no audience", `{"oauth": {"issuer": "https://idp.example"}}`,
			`config: oauth.audience: is required: the URL clients reach this server's /mcp at, which tokens must be issued for`},
		{"a key set over http elsewhere",
			`{"oauth": {"issuer": "https://idp.example", "audience": "https://toolgate.example/mcp", "jwksUrl": "http://idp.example/keys"}}`,
			`config: oauth.jwksUrl: "http://idp.example/keys": http:// is allowed only on a loopback address; use https://`},
		{"an unknown field", `{"oauth": {"issuer": "https://idp.example", "audience": "https://t.example", "clientId": "x"}}`,
			`config: oauth: unknown field "clientId"`},
		{"two scopes in one", `{"oauth": {"issuer": "https://idp.example", "audience": "https://t.example", "scopes": {"call": "a b"}}}`,
			`config: oauth.scopes.call: must be one scope: no spaces, quotes or backslashes`},
		{"the template without oauth", `{"principals": [{"id": "*"}]}`,
			`config: principals[0].id: "*" is the template for the subjects of access tokens, which need an "oauth" section`},
		{"the template with a key", `{` + oauthSection + `, "principals": [{"id": "*", "apiKeys": ["tg_x"]}]}`,
			`config: principals[0]: the "*" template stands for token subjects and has no API keys of its own`},
		{"the template in approver mode", `{` + oauthSection + `, "principals": [{"id": "*", "approvalMode": "approver"}]}`,
			`config: principals[0].approvalMode: the "*" template is in approver mode, but no budget has an approver (its "approvers", or an approver's "budgets"): no token subject's call needing approval could ever run`},
		{"a claims approver without oauth", `{"principals": [{"id": "alice", "apiKeys": ["tg_alice_key_1"]}], "approvers": [{"id": "leads", "claims": {"groups": "leads"}}]}`,
			`config: approvers[0].claims: claims match access tokens, which need an "oauth" section; give keys for an approver who signs in with a key`},
		{"an approver of no configured budget", `{` + oauthSection + `, "principals": [{"id": "*"}], "approvers": [{"id": "leads", "claims": {"groups": "leads"}, "budgets": ["search-team"]}]}`,
			`config: approvers[0].budgets[0]: no budget "search-team" is configured`},
		{"an approver's empty claim", `{` + oauthSection + `, "principals": [{"id": "*"}], "approvers": [{"id": "leads", "claims": {"groups": ""}}]}`,
			`config: approvers[0].claims.groups: is empty: a token's claim is matched exactly, and no team is named by nothing`},
		{"an approver for the template", `{` + oauthSection + `, "principals": [{"id": "*"}], "approvers": [{"id": "pat", "principals": ["*"]}]}`,
			`config: approvers[0].principals[0]: an approver approves for principals it names, not for the "*" template`},
		{"a principal without keys or oauth", `{"principals": [{"id": "alice"}]}`,
			`config: principals[0]: principal "alice" has no apiKeys or apiKeySha256, so it could never call`},
		{"an approver without keys or an approver claim",
			`{"oauth": {"issuer": "https://idp.example", "audience": "https://t.example"}, "principals": [{"id": "a"}], "approvers": [{"id": "pat", "principals": ["a"]}]}`,
			`config: approvers[0]: approver "pat" has no keys, keySha256 or claims, and no oauth.approverClaim can name it, so it could never sign in`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.doc))
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
		})
	}
}

func TestTemplateControlsApplyToEverySubject(t *testing.T) {
	t.Parallel()
	ten := 10
	tc := templateControls{
		controls: map[string]toolgatetype.SpendControls{"ci-bot": {}},
		template: toolgatetype.SpendControls{RateLimitPerMinute: &ten},
	}
	for principal, want := range map[string]*int{"ci-bot": nil, "alice@example.com": &ten, strings.Repeat("x", 255): &ten} {
		c, err := tc.SpendControls(t.Context(), principal)
		require.NoError(t, err)
		assert.Equal(t, want, c.RateLimitPerMinute, principal)
	}
}

func TestREADMEIdentityProviderConfigExample(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig(readmeConfigExample(t, "Signing in with your identity provider"))
	require.NoError(t, err)
	require.NotNil(t, cfg.OAuth)
	assert.Equal(t, "toolgate_approver", cfg.OAuth.ApproverClaim)
	assert.NotNil(t, cfg.template())
	assert.Empty(t, cfg.Approvers[0].Keys)
}
