package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
)

// TestTeamLeadsSignedInThroughTheProviderApproveTheirTeam is section 30
// whole: agents that sign in with the provider's tokens are in approver
// mode through the "*" template; each counts in its team's budget by its
// groups claim; a team lead is an approver by the groups of the ID token
// they sign in on the approval pages with (authorization code with PKCE,
// driven as a browser drives it), and approves for the budget's members.
// The search lead sees exactly the search agent's request and approves
// it, which then runs; the ads lead sees none of it, and its page is 404.
func TestTeamLeadsSignedInThroughTheProviderApproveTheirTeam(t *testing.T) {
	t.Parallel()
	api := httptest.NewUnstartedServer(nil)
	_, port, _ := strings.Cut(api.Listener.Addr().String(), ":")
	base := "http://localhost:" + port
	idp := testidp.Start(t, base+"/mcp")
	idp.AddClient(testidp.Client{ID: "search-agent", Secret: "s1", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{"groups": []string{"search"}}})
	idp.AddClient(testidp.Client{ID: "ads-agent", Secret: "s2", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{"groups": []string{"ads"}}})
	idp.AddUser(testidp.User{Subject: "u-lee", Username: "lee", Password: "pw", Claims: map[string]any{"groups": []string{"search", "leads"}}})
	idp.AddUser(testidp.User{Subject: "u-ada", Username: "ada", Password: "pw", Claims: map[string]any{"groups": []string{"ads", "ads-leads"}}})
	idp.AddWebClient(testidp.WebClient{ID: "toolgate-pages", Secret: "pages-secret", RedirectURIs: []string{base + "/approvals/signed-in"}})

	cfg, err := ParseConfig([]byte(`{"storage": "sqlite:` + filepath.Join(t.TempDir(), "toolgate.db") + `", "feeRate": "0",
		"oauth": {"issuer": "` + idp.Issuer + `", "audience": "` + base + `/mcp",
			"pages": {"clientId": "toolgate-pages", "clientSecret": "pages-secret", "redirectUrl": "` + base + `/approvals/signed-in", "name": "Test IdP"}},
		"principals": [{"id": "*", "approvalMode": "approver"}],
		"approvers": [
			{"id": "leads", "claims": {"groups": "leads"}, "budgets": ["search-team"]},
			{"id": "ads-leads", "claims": {"groups": "ads-leads"}, "budgets": ["ads-team"]}],
		"budgets": [
			{"id": "search-team", "claims": {"groups": "search"}, "dailyLimitUsd": "100"},
			{"id": "ads-team", "claims": {"groups": "ads"}, "dailyLimitUsd": "100"}]}`))
	require.NoError(t, err)
	srv, err := New(t.Context(), cfg, &Options{Offline: true, Getenv: func(string) string { return "" }})
	require.NoError(t, err)
	defer srv.Close()
	api.Config.Handler = srv.Handler()
	api.Start()
	defer api.Close()

	send := func(token, method, path string, body any, headers ...string) (int, map[string]any) {
		data, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest(method, base+path, bytes.NewReader(data))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
		return resp.StatusCode, out
	}
	input := map[string]any{"goal": "team leads", "step": 1}
	// Each agent asks: the template puts it in approver mode.
	ask := func(token string) (quote map[string]any, id string) {
		status, q := send(token, http.MethodPost, "/v1/tools/goal-data/quote", nil)
		require.Equal(t, http.StatusCreated, status, "%v", q)
		quote = q["quote"].(map[string]any)
		status, refused := send(token, http.MethodPost, "/v1/tools/goal-data/call", map[string]any{"quoteId": quote["id"], "input": input,
			"approval": map[string]any{"manifestDigest": quote["manifestDigest"]}}, "Idempotency-Key", "k-"+token[len(token)-8:])
		require.Equal(t, http.StatusForbidden, status)
		require.Equal(t, "approval_required", refused["error"].(map[string]any)["code"])
		status, r := send(token, http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quote["id"], "input": input})
		require.Equal(t, http.StatusCreated, status, "%v", r)
		return quote, r["id"].(string)
	}
	searchToken, adsToken := idp.Token(t, "search-agent"), idp.Token(t, "ads-agent")
	searchQuote, searchID := ask(searchToken)
	_, adsID := ask(adsToken)

	signIn := func(username string) *testbrowser.Browser {
		b := testbrowser.New(t)
		opened := b.Get(base + "/approvals")
		m := regexp.MustCompile(`<a class="button" href="([^"]+)">Sign in with Test IdP</a>`).FindStringSubmatch(opened.Body)
		require.NotNil(t, m, opened.Body)
		start, err := opened.URL.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
		require.NoError(t, err)
		back := b.Get(start.String()).Form("username").Set("username", username).Set("password", "pw").Submit("Sign in")
		require.Equal(t, http.StatusOK, back.Status, back.Body)
		return b
	}

	lee := signIn("lee")
	list := lee.Get(base + "/approvals")
	require.Equal(t, http.StatusOK, list.Status)
	assert.Contains(t, list.Body, searchID, "the search lead sees the search agent's request")
	assert.NotContains(t, list.Body, adsID, "and not the ads agent's")
	assert.Equal(t, http.StatusNotFound, lee.Get(base+"/approvals/"+adsID).Status)

	ada := signIn("ada")
	assert.NotContains(t, ada.Get(base+"/approvals").Body, searchID, "the ads lead sees none of the search team's")
	assert.Equal(t, http.StatusNotFound, ada.Get(base+"/approvals/"+searchID).Status)

	page := lee.Get(base + "/approvals/" + searchID)
	require.True(t, page.HasForm("decision"), page.Body)
	values := page.Form("decision").Values
	values.Set("decision", "approve")
	decided := lee.Post(page.URL, "", values)
	require.Equal(t, http.StatusOK, decided.Status, decided.Body)

	status, done := send(searchToken, http.MethodPost, "/v1/tools/goal-data/call", map[string]any{"quoteId": searchQuote["id"], "input": input,
		"approval": map[string]any{"manifestDigest": searchQuote["manifestDigest"], "grantId": searchID}}, "Idempotency-Key", "k-granted")
	require.Equal(t, http.StatusOK, status, "%v", done)
	assert.Equal(t, "completed", done["status"])
	assert.Equal(t, "leads", done["receipt"].(map[string]any)["receipt"].(map[string]any)["approval"].(map[string]any)["decidedBy"],
		"decided by the approver the lead's groups make them")
}
