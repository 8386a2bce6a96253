package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/internal/testidp"
)

func TestParseConfigOAuthPages(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{"oauth": {"issuer": "https://idp.example", "audience": "https://toolgate.example/mcp",
		"approverClaim": "toolgate_approver",
		"pages": {"clientId": "toolgate-pages", "clientSecret": "s", "redirectUrl": "https://toolgate.example/approvals/signed-in",
			"name": "Example SSO", "scopes": ["groups"]}},
		"principals": [{"id": "*"}], "approvers": [{"id": "pat"}]}`))
	require.NoError(t, err)
	assert.Equal(t, &OAuthPages{ClientID: "toolgate-pages", ClientSecret: "s", RedirectURL: "https://toolgate.example/approvals/signed-in",
		Name: "Example SSO", Scopes: []string{"groups"}}, cfg.OAuth.Pages)

	_, err = ParseConfig([]byte(`{"oauth": {"issuer": "http://127.0.0.1:9000", "audience": "http://localhost:8080/mcp",
		"approverClaim": "a", "pages": {"clientId": "p", "redirectUrl": "http://localhost:8080/approvals/signed-in"}},
		"principals": [{"id": "*"}]}`))
	require.NoError(t, err, "http:// on a loopback address, and a public client")
}

func TestParseConfigOAuthPagesErrors(t *testing.T) {
	t.Parallel()
	section := func(pages string) string {
		return `{"oauth": {"issuer": "https://idp.example", "audience": "https://t.example/mcp", "approverClaim": "a", "pages": ` +
			pages + `}, "principals": [{"id": "*"}]}`
	}
	for _, c := range []struct {
		name, doc, want string
	}{
		{"no redirect URL", section(`{"clientId": "p"}`),
			`config: oauth.pages.redirectUrl: is required: the URL of this server the identity provider sends people back to, as registered for the client`},
		{"no client id", section(`{"redirectUrl": "https://t.example/approvals/signed-in"}`),
			`config: oauth.pages.clientId: is required: the approval pages' client id at the identity provider, which ID tokens are issued for`},
		{"http elsewhere", section(`{"clientId": "p", "redirectUrl": "http://t.example/approvals/signed-in"}`),
			`config: oauth.pages.redirectUrl: "http://t.example/approvals/signed-in": http:// is allowed only on a loopback address; use https://`},
		{"not http", section(`{"clientId": "p", "redirectUrl": "ftp://t.example/cb"}`),
			`config: oauth.pages.redirectUrl: "ftp://t.example/cb": must be an absolute http:// or https:// URL`},
		{"relative", section(`{"clientId": "p", "redirectUrl": "/approvals/signed-in"}`),
			`config: oauth.pages.redirectUrl: "/approvals/signed-in": must be an absolute http:// or https:// URL`},
		{"no path", section(`{"clientId": "p", "redirectUrl": "https://t.example"}`),
			`config: oauth.pages.redirectUrl: "https://t.example": must have a path for the server to answer at, such as "/approvals/signed-in"`},
		{"a path the server serves", section(`{"clientId": "p", "redirectUrl": "https://t.example/approvals"}`),
			`config: oauth.pages.redirectUrl: "https://t.example/approvals": its path is one the server already serves`},
		{"an API path", section(`{"clientId": "p", "redirectUrl": "https://t.example/v1/tools"}`),
			`config: oauth.pages.redirectUrl: "https://t.example/v1/tools": its path is one the server already serves`},
		{"a query", section(`{"clientId": "p", "redirectUrl": "https://t.example/cb?x=1"}`),
			`config: oauth.pages.redirectUrl: "https://t.example/cb?x=1": must have no user, query or fragment`},
		{"an unknown field", section(`{"clientId": "p", "redirectUrl": "https://t.example/cb", "secret": "x"}`),
			`config: oauth.pages: unknown field "secret"`},
		{"a scope with a space", section(`{"clientId": "p", "redirectUrl": "https://t.example/cb", "scopes": ["a b"]}`),
			`config: oauth.pages.scopes[0]: must be one scope: no spaces, quotes or backslashes`},
		{"no approver claim",
			`{"oauth": {"issuer": "https://idp.example", "audience": "https://t.example/mcp", "pages": {"clientId": "p", "redirectUrl": "https://t.example/cb"}}, "principals": [{"id": "*"}]}`,
			`config: oauth.pages: needs "oauth.approverClaim", the ID token claim naming the approver a person is, or an approver with "claims": without either nobody could sign in`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.doc))
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
		})
	}
}

// TestOAuthPagesSignInThroughTheServer: the server's approval pages sign a
// person in through the identity provider of its "oauth" section, as the
// approver their approverClaim names (pat, who has no key); they approve
// alice's request, and alice's call with the grant runs. A person whose
// claim names no approver of the config is refused.
func TestOAuthPagesSignInThroughTheServer(t *testing.T) {
	t.Parallel()
	idp := testidp.Start(t, "https://toolgate.example/mcp")
	idp.AddUser(testidp.User{Subject: "u-pat", Username: "pat-person", Password: "pw", Claims: map[string]any{"toolgate_approver": "pat"}})
	idp.AddUser(testidp.User{Subject: "u-sam", Username: "sam-person", Password: "pw", Claims: map[string]any{"toolgate_approver": "sam"}})
	api := httptest.NewUnstartedServer(nil)
	_, port, _ := strings.Cut(api.Listener.Addr().String(), ":")
	base := "http://localhost:" + port
	idp.AddWebClient(testidp.WebClient{ID: "toolgate-pages", Secret: "pages-secret", RedirectURIs: []string{base + "/approvals/signed-in"}})

	// A SQLite store: the sessions, and the spent sign-ins beside them,
	// are the store's, as instances sharing it see them.
	cfg, err := ParseConfig([]byte(`{"storage": "sqlite:` + filepath.Join(t.TempDir(), "toolgate.db") + `",
		"oauth": {"issuer": "` + idp.Issuer + `", "audience": "https://toolgate.example/mcp",
		"approverClaim": "toolgate_approver",
		"pages": {"clientId": "toolgate-pages", "clientSecret": "pages-secret", "redirectUrl": "` + base + `/approvals/signed-in", "name": "Test IdP"}},
		"principals": [{"id": "alice", "apiKeys": ["tg_test_pages_alice"], "approvalMode": "approver"}],
		"approvers": [{"id": "pat", "principals": ["alice"]}]}`))
	require.NoError(t, err)
	srv, err := New(t.Context(), cfg, &Options{Offline: true, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	defer srv.Close()
	api.Config.Handler = srv.Handler()
	api.Start()
	defer api.Close()

	do := func(method, path string, body any, headers ...string) map[string]any {
		data, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest(method, base+path, bytes.NewReader(data))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tg_test_pages_alice")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, path, raw)
		var out map[string]any
		require.NoError(t, json.Unmarshal(raw, &out))
		return out
	}
	quote := do(http.MethodPost, "/v1/tools/goal-data/quote", nil)["quote"].(map[string]any)
	input := map[string]any{"goal": "sign in", "step": 1}
	id := do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quote["id"], "input": input})["id"].(string)

	signIn := func(username string) (*testbrowser.Browser, *testbrowser.Page) {
		b := testbrowser.New(t)
		opened := b.Get(base + "/approvals/" + id)
		m := regexp.MustCompile(`<a class="button" href="([^"]+)">Sign in with Test IdP</a>`).FindStringSubmatch(opened.Body)
		require.NotNil(t, m, opened.Body)
		start, err := opened.URL.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
		require.NoError(t, err)
		back := b.Get(start.String()).Form("username").Set("username", username).Set("password", "pw").Submit("Sign in")
		return b, back
	}

	_, refused := signIn("sam-person")
	assert.Equal(t, http.StatusForbidden, refused.Status, "sam is no approver of this config")
	assert.NotContains(t, refused.Body, "goal-data")

	b, back := signIn("pat-person")
	require.Equal(t, http.StatusOK, back.Status, back.Body)
	page := b.Get(base + "/approvals/" + id)
	require.True(t, page.HasForm("decision"), page.Body)
	values := page.Form("decision").Values
	values.Set("decision", "approve")
	decided := b.Post(page.URL, "", values)
	require.Equal(t, http.StatusOK, decided.Status, decided.Body)

	done := do(http.MethodPost, "/v1/tools/goal-data/call", map[string]any{"quoteId": quote["id"], "input": input,
		"approval": map[string]any{"manifestDigest": quote["manifestDigest"], "grantId": id}}, "Idempotency-Key", "k-pages")
	assert.Equal(t, "completed", done["status"], "%v", done)
	assert.Equal(t, "pat", done["receipt"].(map[string]any)["receipt"].(map[string]any)["approval"].(map[string]any)["decidedBy"],
		"decided by the approver the person's claim names")
}

func TestREADMEApprovalPagesProviderExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(readme), "\n### Approval pages that sign people in with the provider\n")
	require.True(t, found)
	_, example, found := strings.Cut(section, "```json\n")
	require.True(t, found)
	example, _, _ = strings.Cut(example, "```")
	cfg, err := ParseConfig([]byte(example))
	require.NoError(t, err)
	require.NotNil(t, cfg.OAuth.Pages)
	assert.Equal(t, "Acme SSO", cfg.OAuth.Pages.Name)
}
