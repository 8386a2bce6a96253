package main

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
)

// TestServerApproversOfBudgetsByClaims runs the server binary with the
// "*" template in approver mode and approvers reached by their tokens'
// groups (contract section 30), on SQLite and, when
// TOOLGATE_TEST_POSTGRES_URL names one, on PostgreSQL: an agent the
// config never names, counted in the search team's budget by its groups,
// must ask; the search team's lead, signed in with a token of the "leads"
// group, sees exactly that request and approves it, and the call runs; the
// ads team's lead sees none of it and cannot decide it (404).
func TestServerApproversOfBudgetsByClaims(t *testing.T) {
	t.Parallel()
	eachDurableStore(t, testApproversOfBudgetsByClaims)
}

func testApproversOfBudgetsByClaims(t *testing.T, storage string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	base := "http://" + addr
	idp := testidp.Start(t, base+"/mcp")
	// Names of their own, so that runs sharing a database never meet.
	agentID, search, ads := randomKey(t, "agent-"), randomKey(t, "search-"), randomKey(t, "ads-")
	idp.AddClient(testidp.Client{ID: agentID, Secret: "secret-agent", Scopes: []string{oauth.DefaultCallScope},
		Claims: map[string]any{"groups": []string{"staff", "search"}}})
	idp.AddClient(testidp.Client{ID: "ann", Secret: "secret-ann", Scopes: []string{oauth.DefaultApproveScope},
		Claims: map[string]any{"groups": []string{"staff", "leads"}}})
	idp.AddClient(testidp.Client{ID: "bob", Secret: "secret-bob", Scopes: []string{oauth.DefaultApproveScope},
		Claims: map[string]any{"groups": "ads-leads"}})
	path := writeConfig(t, map[string]any{
		"listen":     addr,
		"storage":    storage,
		"feeRate":    "0",
		"oauth":      map[string]any{"issuer": idp.Issuer, "audience": base + "/mcp"},
		"principals": []any{map[string]any{"id": "*", "approvalMode": "approver"}},
		"approvers": []any{
			map[string]any{"id": "leads", "claims": map[string]any{"groups": "leads"}, "budgets": []string{search}},
			map[string]any{"id": "ads-leads", "claims": map[string]any{"groups": "ads-leads"}},
		},
		"budgets": []any{
			map[string]any{"id": search, "claims": map[string]any{"groups": "search"}, "dailyLimitUsd": "100.0000"},
			// The other side of the one relation: the budget names its approver.
			map[string]any{"id": ads, "claims": map[string]any{"groups": "ads"}, "dailyLimitUsd": "100.0000", "approvers": []string{"ads-leads"}},
		},
	})
	srv, got := startServer(t, []string{"-config", path, "-offline"})
	require.Equal(t, base, got)
	agent := client{t: t, base: base, key: idp.Token(t, agentID)}
	input := map[string]any{"goal": "claims approvers", "step": 1}

	// The template's approver mode holds for a subject the config never names.
	quoteID, digest, _ := agent.quote("goal-data")
	r := agent.call("goal-data", quoteID, digest, "claims-1", input)
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	assert.Equal(t, "approval_required", r.json(t)["error"].(map[string]any)["code"])
	r = agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": input})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	id := r.json(t)["id"].(string)

	// The ads team's lead sees none of it, and cannot decide it.
	bob := client{t: t, base: base, key: idp.Token(t, "bob")}
	r = bob.do(http.MethodGet, "/v1/approval-requests?status=all", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Empty(t, r.json(t)["approvalRequests"], "another team's lead sees nothing")
	for _, path := range []string{"/v1/approval-requests/" + id + "/approve", "/v1/approval-requests/" + id + "/deny"} {
		r = bob.do(http.MethodPost, path, nil)
		require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		assert.Equal(t, "approval_request_not_found", r.json(t)["error"].(map[string]any)["code"])
	}
	assert.Equal(t, http.StatusNotFound, bob.do(http.MethodGet, "/v1/approval-requests/"+id, nil).status)

	// The search team's lead, by the groups of its token, sees exactly it.
	ann := client{t: t, base: base, key: idp.Token(t, "ann")}
	r = ann.do(http.MethodGet, "/v1/approval-requests", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	list := r.json(t)["approvalRequests"].([]any)
	require.Len(t, list, 1, "%s", r.body)
	assert.Equal(t, id, list[0].(map[string]any)["id"])
	assert.Equal(t, agentID, list[0].(map[string]any)["principal"])
	r = ann.do(http.MethodPost, "/v1/approval-requests/"+id+"/approve", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "approved", r.json(t)["status"])
	assert.Equal(t, "leads", r.json(t)["decidedBy"])

	// The agent's call with the grant runs.
	r = grantedCall(agent, "goal-data", quoteID, digest, id, "claims-2", input)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "used", agent.do(http.MethodGet, "/v1/approval-requests/"+id, nil).json(t)["status"])

	assert.Equal(t, 0, srv.stop(exitTimeout))
	out := srv.stdout.String() + srv.stderr.String()
	assert.NotContains(t, out, agent.key, "no token in any output")
	assert.NotContains(t, out, ann.key)
}

// TestServerRefusesApproverMistakes: an approver no one could ever sign in
// as, a claims approver without "oauth", and an approver of a budget not
// configured stop the server at start with exit 2 and one line naming the
// field.
func TestServerRefusesApproverMistakes(t *testing.T) {
	t.Parallel()
	oauthSection := map[string]any{"issuer": "http://127.0.0.1:1/idp", "audience": "http://127.0.0.1:1/mcp"}
	withKeys := []any{map[string]any{"id": "alice", "apiKeys": []string{randomKey(t, "tg_test_alice_")}}}
	cases := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"an approver with neither keys nor claims", map[string]any{"principals": withKeys,
			"approvers": []any{map[string]any{"id": "pat", "principals": []string{"alice"}}}},
			`config: approvers[0]: approver "pat" has no keys, keySha256 or claims, and no oauth.approverClaim can name it, so it could never sign in`},
		{"a claims approver without oauth", map[string]any{"principals": withKeys,
			"approvers": []any{map[string]any{"id": "leads", "claims": map[string]any{"groups": "leads"}}}},
			`config: approvers[0].claims: claims match access tokens, which need an "oauth" section; give keys for an approver who signs in with a key`},
		{"an approver of a budget not configured", map[string]any{"oauth": oauthSection, "principals": []any{map[string]any{"id": "*"}},
			"approvers": []any{map[string]any{"id": "leads", "claims": map[string]any{"groups": "leads"}, "budgets": []string{"search-team"}}}},
			`config: approvers[0].budgets[0]: no budget "search-team" is configured`},
		{"the template in approver mode with no budget approver", map[string]any{"oauth": oauthSection,
			"principals": []any{map[string]any{"id": "*", "approvalMode": "approver"}},
			"budgets":    []any{map[string]any{"id": "search-team", "claims": map[string]any{"groups": "search"}, "dailyLimitUsd": "1.0000"}}},
			`config: principals[0].approvalMode: the "*" template is in approver mode, but no budget has an approver (its "approvers", or an approver's "budgets"): no token subject's call needing approval could ever run`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.cfg["listen"] = "127.0.0.1:0"
			path := writeConfig(t, c.cfg)
			srv := startProcess(t, []string{"-config", path, "-offline"})
			assert.Equal(t, exitUsage, srv.wait(exitTimeout))
			stderr := srv.stderr.String()
			assert.Equal(t, "toolgate: "+path+": "+c.want+"\n", stderr)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line")
		})
	}
}
