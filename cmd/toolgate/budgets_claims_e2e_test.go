package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
)

// TestServerCountsTokenGroupsInTheirTeamsBudget runs the server binary
// with a budget whose claims name a group of the identity provider: people
// the config never lists, signed in with tokens whose groups claim holds
// "search" (as an array or a string), share the team's daily limit over
// the HTTP API and /mcp alike; a token of another group is not counted.
func TestServerCountsTokenGroupsInTheirTeamsBudget(t *testing.T) {
	t.Parallel()
	untilPastMidnight(t, time.Minute) // the team's window is a day
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	base := "http://" + addr
	idp := testidp.Start(t, base+"/mcp")
	call := []string{oauth.DefaultCallScope}
	idp.AddClient(testidp.Client{ID: "ann", Secret: "secret-ann", Scopes: call, Claims: map[string]any{"groups": []string{"staff", "search"}}})
	idp.AddClient(testidp.Client{ID: "ben", Secret: "secret-ben", Scopes: call, Claims: map[string]any{"groups": "search"}})
	idp.AddClient(testidp.Client{ID: "cat", Secret: "secret-cat", Scopes: call, Claims: map[string]any{"groups": []string{"maps", "Search"}}})
	patKey := randomKey(t, "tg_test_claims_pat_")
	path := writeConfig(t, map[string]any{
		"listen":     addr,
		"storage":    "sqlite:" + filepath.Join(t.TempDir(), "toolgate.db"),
		"feeRate":    "0",
		"oauth":      map[string]any{"issuer": idp.Issuer, "audience": base + "/mcp"},
		"principals": []any{map[string]any{"id": "*"}},
		"approvers":  []any{map[string]any{"id": "pat", "keys": []string{patKey}}},
		"budgets": []any{map[string]any{"id": "search-team", "name": "Search team", "claims": map[string]any{"groups": "search"},
			"dailyLimitUsd": "0.2000", "approvers": []string{"pat"}}},
	})
	srv, got := startServer(t, []string{"-config", path, "-offline"})
	require.Equal(t, base, got)
	goal := func(n int) map[string]any { return map[string]any{"goal": fmt.Sprintf("claims %d", n), "step": 1} }

	// ann's token, groups ["staff", "search"], takes the first 0.1000.
	ann := client{t: t, base: base, key: idp.Token(t, "ann")}
	quoteID, digest, quote := ann.quote("goal-data")
	budgets := quote["controls"].(map[string]any)["budgets"].([]any)
	require.Len(t, budgets, 1, "ann's quote shows her team's budget: %v", quote)
	assert.Equal(t, "search-team", budgets[0].(map[string]any)["id"])
	r := ann.call("goal-data", quoteID, digest, "ann-1", goal(1))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	// ben's, groups "search", the second, over /mcp.
	benToken := idp.Token(t, "ben")
	transport := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: withKey{benToken}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claims-e2e", Version: "1"}, nil).Connect(context.Background(), transport, nil)
	require.NoError(t, err)
	mcpDigest, _ := mcpTools(t, cs)["goal-data"].Meta["toolgate/manifestDigest"].(string)
	completed(t, mcpCall(t, cs, "goal-data", goal(2), mcp.Meta{"toolgate/approval": mcpDigest}))

	// The team's 0.2000 is spent: a third call, by either, is refused by
	// the team's budget, over MCP as over the API.
	res := mcpCall(t, cs, "goal-data", goal(3), mcp.Meta{"toolgate/approval": mcpDigest})
	require.True(t, res.IsError, "the team's budget is spent")
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "spend_limit_exceeded")
	require.NoError(t, cs.Close())
	quoteID, digest, _ = ann.quote("goal-data")
	r = ann.call("goal-data", quoteID, digest, "ann-2", goal(4))
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	e := r.json(t)["error"].(map[string]any)
	assert.Equal(t, "spend_limit_exceeded", e["code"])
	assert.Contains(t, e["violations"], "Call would exceed the Search team budget's daily limit of $0.2000")
	refusal := e["budget"].(map[string]any)
	assert.Equal(t, "search-team", refusal["id"])
	assert.Equal(t, "daily", refusal["window"])
	assert.Equal(t, "0.2000", refusal["limitUsd"])
	assert.Equal(t, "0.2000", refusal["usedUsd"])
	assert.Equal(t, "0.1000", refusal["requestedUsd"])

	// cat's groups hold "maps" and "Search", not "search": her calls count
	// in no budget.
	cat := client{t: t, base: base, key: idp.Token(t, "cat")}
	for i := range 3 {
		quoteID, digest, quote := cat.quote("goal-data")
		assert.NotContains(t, quote["controls"], "budgets", "cat counts in no budget")
		r := cat.call("goal-data", quoteID, digest, "cat-"+string(rune('a'+i)), goal(10+i))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}

	// The approver sees the team's day: the two calls of its people.
	pat := client{t: t, base: base, key: patKey}
	r = pat.do(http.MethodGet, "/v1/budgets", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	listed := r.json(t)["budgets"].([]any)
	require.Len(t, listed, 1)
	daily := listed[0].(map[string]any)["windows"].(map[string]any)["daily"].(map[string]any)
	assert.Equal(t, "0.2000", daily["usedUsd"])
	assert.Equal(t, "0.0000", daily["remainingUsd"])
	r = pat.do(http.MethodGet, "/v1/budgets/search-team/spend?groupBy=principal", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Contains(t, string(r.body), `"ann"`)
	assert.Contains(t, string(r.body), `"ben"`)
	assert.NotContains(t, string(r.body), `"cat"`)

	// And on the pages: signed in, the approvals list links the Spend
	// page, which shows the team's day.
	browser := testbrowser.New(t)
	page := browser.Get(base+"/approvals").Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	var spendLink string
	for _, a := range page.Elements("a") {
		for _, attr := range a.Attr {
			if attr.Key == "href" && a.FirstChild != nil && a.FirstChild.Data == "Spend" {
				spendLink = attr.Val
			}
		}
	}
	require.NotEmpty(t, spendLink, "the approvals list links Spend: %s", page.Body)
	from, err := url.Parse(base + "/approvals")
	require.NoError(t, err)
	link, err := url.Parse(spendLink)
	require.NoError(t, err)
	page = browser.Get(from.ResolveReference(link).String())
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Contains(t, page.Text(), "Search team")
	assert.Contains(t, page.Body, "<svg", "the month's days drawn by the server")

	assert.Equal(t, 0, srv.stop(exitTimeout))
}
