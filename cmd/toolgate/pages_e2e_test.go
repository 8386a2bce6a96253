package main

import (
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/internal/testidp"
)

// TestApprovalPagesSignInThroughTheProviderAcrossTheFleet: two server
// binaries on one SQLite file. A person opens a request on the first,
// signs in through a real OpenID provider that sends them back to the
// second (which opens the sign-in with the fleet's key and starts the
// session in the store), approves on the first as the approver their
// claim names (pat, with no key), and alice's call with the grant runs on
// the second. Neither server logs the provider's code or state.
func TestApprovalPagesSignInThroughTheProviderAcrossTheFleet(t *testing.T) {
	t.Parallel()
	var ports [2]string
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		_, ports[i], _ = strings.Cut(ln.Addr().String(), ":")
		require.NoError(t, ln.Close())
	}
	// localhost, not 127.0.0.1 as the provider is: two sites, as in use.
	one, two := "http://localhost:"+ports[0], "http://localhost:"+ports[1]
	redirect := two + "/approvals/signed-in"
	idp := testidp.Start(t, one+"/mcp")
	idp.AddUser(testidp.User{Subject: "u-pat", Username: "pat-person", Password: "pw", Claims: map[string]any{"toolgate_approver": "pat"}})
	pagesSecret := randomKey(t, "tg_test_pages_client_secret_")
	idp.AddWebClient(testidp.WebClient{ID: "toolgate-pages", Secret: pagesSecret, RedirectURIs: []string{redirect}})

	db := filepath.Join(t.TempDir(), "toolgate.db")
	aliceKey := randomKey(t, "tg_test_pages_alice_")
	var procs [2]*process
	for i, port := range ports {
		path := writeConfig(t, map[string]any{
			"listen":  "127.0.0.1:" + port,
			"storage": "sqlite:" + db,
			"oauth": map[string]any{"issuer": idp.Issuer, "audience": one + "/mcp", "approverClaim": "toolgate_approver",
				"pages": map[string]any{"clientId": "toolgate-pages", "clientSecret": pagesSecret, "redirectUrl": redirect, "name": "Test IdP"}},
			"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{aliceKey}, "approvalMode": "approver"}},
			"approvers":  []any{map[string]any{"id": "pat", "principals": []string{"alice"}}},
		})
		procs[i], _ = startServer(t, []string{"-config", path, "-offline"})
	}

	alice := client{t: t, base: one, key: aliceKey}
	quoteID, digest, _ := alice.quote("goal-data")
	input := map[string]any{"goal": "fleet sign-in", "step": 1}
	r := alice.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": input})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	id := r.json(t)["id"].(string)

	b := testbrowser.New(t)
	opened := b.Get(one + "/approvals/" + id)
	m := regexp.MustCompile(`<a class="button" href="([^"]+)">Sign in with Test IdP</a>`).FindStringSubmatch(opened.Body)
	require.NotNil(t, m, opened.Body)
	start, err := opened.URL.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
	require.NoError(t, err)
	back := b.Get(start.String()).Form("username").Set("username", "pat-person").Set("password", "pw").Submit("Sign in")
	require.Equal(t, http.StatusOK, back.Status, back.Body)
	assert.Equal(t, "localhost:"+ports[1], back.URL.Host, "the provider sent the person back to the other instance")
	assert.Contains(t, back.Text(), "Signed in as pat")

	page := b.Get(one + "/approvals/" + id)
	require.True(t, page.HasForm("decision"), "the session the second instance started is the first's too: %s", page.Body)
	values := page.Form("decision").Values
	values.Set("decision", "approve")
	decided := b.Post(page.URL, "", values)
	require.Equal(t, http.StatusOK, decided.Status, decided.Body)

	done := client{t: t, base: two, key: aliceKey}.do(http.MethodPost, "/v1/tools/goal-data/call",
		map[string]any{"quoteId": quoteID, "input": input, "approval": map[string]any{"manifestDigest": digest, "grantId": id}},
		"Idempotency-Key", "k-fleet-pages")
	require.Equal(t, http.StatusOK, done.status, "%s", done.body)
	assert.Equal(t, "completed", done.json(t)["status"])

	// The code, the state, the pages' client secret and the caller's key
	// are in no output of either instance.
	for _, secret := range []string{back.URL.Query().Get("code"), back.URL.Query().Get("state"), pagesSecret, aliceKey} {
		require.NotEmpty(t, secret)
		for _, p := range procs {
			assert.NotContains(t, p.stderr.String()+p.stdout.String(), secret)
		}
	}
}
