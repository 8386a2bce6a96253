package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/tools/goalprovider"
)

// TestRulesAskSendsACallerToTheNamedApprover runs the server with an ask
// rule that names the approver "lead" for goal-data's step 2, and an audit
// rule on step 3. The caller is in caller mode, so its own approval of the
// digest would do for the tool: the rule makes it wait for lead, whom its
// own approver ops cannot stand in for, on the page as through the API.
// The audit rule changes nothing, and is counted and in the audit record.
func TestRulesAskSendsACallerToTheNamedApprover(t *testing.T) {
	t.Parallel()
	goal := httptest.NewServer(goalprovider.New())
	defer goal.Close()
	agentKey := randomKey(t, "tg_test_agent_")
	leadKey := randomKey(t, "tg_test_lead_")
	opsKey := randomKey(t, "tg_test_ops_")
	path := writeConfig(t, map[string]any{
		"listen":        "127.0.0.1:0",
		"metricsListen": "127.0.0.1:0",
		"principals":    []any{map[string]any{"id": "agent", "apiKeys": []string{agentKey}}},
		"approvers": []any{
			map[string]any{"id": "lead", "keys": []string{leadKey}},
			map[string]any{"id": "ops", "keys": []string{opsKey}, "principals": []string{"agent"}},
		},
		"rules": []any{
			map[string]any{"name": "step-two-needs-a-lead", "effect": "ask", "approvers": []string{"lead"},
				"when": "tool.slug == 'goal-data' && input.step == 2"},
			map[string]any{"name": "watch-step-three", "effect": "deny", "mode": "audit",
				"when": "tool.slug == 'goal-data' && input.step == 3"},
		},
		"upstreams": map[string]string{"goal-data": goal.URL},
		"trust":     map[string]any{"goal-data": map[string]any{"paymentVerified": true, "endpointVerified": true}},
	})
	srv, base := startServer(t, []string{"-config", path})
	metricsURL := strings.TrimPrefix(srv.waitLine("toolgate metrics on ", 10*time.Second), "toolgate metrics on ")
	agent := client{t: t, base: base, key: agentKey}
	input := map[string]any{"goal": "chart the bay", "step": 2}

	// The quote, which has no input, shows the rule pending.
	quoteID, digest, q := agent.quote("goal-data")
	rules := q["policy"].(map[string]any)["rules"].([]any)
	require.Len(t, rules, 2)
	assert.Equal(t, map[string]any{"name": "step-two-needs-a-lead", "effect": "ask", "message": "step-two-needs-a-lead", "pending": true}, rules[0])

	// The caller's approval of the digest is not enough.
	r := agent.call("goal-data", quoteID, digest, "ask-1", input)
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	e := r.json(t)["error"].(map[string]any)
	assert.Equal(t, "approval_required", e["code"])
	assert.Contains(t, e["message"], "step-two-needs-a-lead")

	r = agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": input})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	id := r.json(t)["id"].(string)

	// ops approves for agent, but this call is lead's alone.
	ops := client{t: t, base: base, key: opsKey}
	listed := ops.do(http.MethodGet, "/v1/approval-requests", nil).json(t)["approvalRequests"].([]any)
	assert.Empty(t, listed, "ops does not see the request")
	r = ops.do(http.MethodPost, "/v1/approval-requests/"+id+"/approve", nil)
	assert.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	opsPage := testbrowser.New(t).Get(base+"/approvals/"+id).Form("key").Set("key", opsKey).Submit("Sign in")
	assert.Equal(t, http.StatusNotFound, opsPage.Status)

	// lead sees it, and approves it on the page.
	lead := client{t: t, base: base, key: leadKey}
	listed = lead.do(http.MethodGet, "/v1/approval-requests", nil).json(t)["approvalRequests"].([]any)
	require.Len(t, listed, 1)
	assert.Equal(t, id, listed[0].(map[string]any)["id"])
	page := testbrowser.New(t).Get(base+"/approvals/"+id).Form("key").Set("key", leadKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Contains(t, page.Text(), "chart the bay")
	page = page.Form("decision").Submit("Approve")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Contains(t, page.Text(), "decided by lead")

	r = grantedCall(agent, "goal-data", quoteID, digest, id, "ask-1", input)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	exec := r.json(t)
	assert.Equal(t, "completed", exec["status"])
	asked := []any{map[string]any{"name": "step-two-needs-a-lead", "effect": "ask", "mode": "enforce"}}
	assert.Equal(t, asked, exec["rules"])
	stored := agent.do(http.MethodGet, "/v1/executions/"+exec["id"].(string), nil)
	require.Equal(t, http.StatusOK, stored.status, "%s", stored.body)
	assert.Equal(t, asked, stored.json(t)["rules"], "the audit record names the rule")

	// Through the API: lead approves the next one with its key.
	quoteID, digest, _ = agent.quote("goal-data")
	r = agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": input})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	id = r.json(t)["id"].(string)
	r = lead.do(http.MethodPost, "/v1/approval-requests/"+id+"/approve", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = grantedCall(agent, "goal-data", quoteID, digest, id, "ask-2", input)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	// The audit rule lets step 3 run, and says it matched.
	quoteID, digest, _ = agent.quote("goal-data")
	r = agent.call("goal-data", quoteID, digest, "audit-1", map[string]any{"goal": "chart the bay", "step": 3})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, []any{map[string]any{"name": "watch-step-three", "effect": "deny", "mode": "audit"}}, r.json(t)["rules"])
	listing := agent.do(http.MethodGet, "/v1/executions?limit=1", nil).json(t)
	assert.Equal(t, []any{map[string]any{"name": "watch-step-three", "effect": "deny", "mode": "audit"}},
		listing["executions"].([]any)[0].(map[string]any)["rules"], "the listing names it too")
	metrics := scrape(t, metricsURL)
	assert.Regexp(t, regexp.MustCompile(`(?m)^toolgate_rule_matches_total\{effect="deny",mode="audit",rule="watch-step-three"\} 1$`), metrics)
	assert.Regexp(t, regexp.MustCompile(`(?m)^toolgate_rule_matches_total\{effect="ask",mode="enforce",rule="step-two-needs-a-lead"\} [1-9]`), metrics)

	assert.Equal(t, 0, srv.stop(exitTimeout))
	// The request lines name the rules that decided them: the refusal's
	// (its only audit record), the approval request's and the calls'.
	var ruled []string
	for _, l := range srv.logLines() {
		if l["msg"] != "request" || l["rules"] == nil {
			continue
		}
		for _, u := range l["rules"].([]any) {
			u := u.(map[string]any)
			ruled = append(ruled, fmt.Sprintf("%v %v %v %v %v", l["path"], l["status"], u["name"], u["effect"], u["mode"]))
		}
	}
	assert.Contains(t, ruled, "/v1/tools/goal-data/call 403 step-two-needs-a-lead ask enforce")
	assert.Contains(t, ruled, "/v1/approval-requests 201 step-two-needs-a-lead ask enforce")
	assert.Contains(t, ruled, "/v1/tools/goal-data/call 200 watch-step-three deny audit")
	out := srv.stdout.String() + srv.stderr.String()
	for _, secret := range []string{agentKey, leadKey, opsKey} {
		assert.NotContains(t, out, secret)
	}
}

// TestConfigCheckRefusesABadRule: config check names the rule and column
// of a rule that cannot work, exit 2, as a start does.
func TestConfigCheckRefusesABadRule(t *testing.T) {
	t.Parallel()
	path := rulesConfig(t, []any{map[string]any{"name": "prod-is-for-sre", "effect": "deny", "when": "tool.slug == 'x' && inpt.path == '/'"}})
	code, out := runCLI(t, nil, "config", "check", "-config", path)
	assert.Equal(t, 2, code)
	assert.Equal(t, "toolgate: "+path+": config: rules[0].when: rule prod-is-for-sre: column 21: undeclared reference to 'inpt' (did you mean 'int' or 'input'?)\n", out)
}
