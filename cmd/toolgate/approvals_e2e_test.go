package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/tools/goalprovider"
	"github.com/toolgate/toolgate/webhook"
)

// hookReceiver is a webhook endpoint that keeps what it is sent.
type hookReceiver struct {
	mu   sync.Mutex
	got  []hookDelivery
	sent chan struct{}
}

type hookDelivery struct {
	header http.Header
	body   []byte
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.got = append(h.got, hookDelivery{header: r.Header.Clone(), body: body})
	h.mu.Unlock()
	h.sent <- struct{}{}
}

// next waits for the next webhook; the deadline only keeps a broken
// server from hanging the test.
func (h *hookReceiver) next(t *testing.T) hookDelivery {
	t.Helper()
	select {
	case <-h.sent:
	case <-time.After(20 * time.Second):
		t.Fatal("no webhook arrived")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[len(h.got)-1]
}

// event checks a webhook's signature and returns its body.
func (d hookDelivery) event(t *testing.T) map[string]any {
	t.Helper()
	key, err := webhook.ParseSecret(webhookSecret)
	require.NoError(t, err)
	secs, err := strconv.ParseInt(d.header.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	require.True(t, webhook.Verify(key, d.header.Get("webhook-id"), time.Unix(secs, 0), d.body, d.header.Get("webhook-signature")),
		"signed as Standard Webhooks says: %v", d.header)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(d.body, &ev))
	return ev
}

// TestServerApproverModeEndToEnd runs the server binary with an agent in
// approver mode and walks the whole flow as its parties would: the agent
// over the API, the person in a browser with a cookie jar, the webhook
// receiving each event.
func TestServerApproverModeEndToEnd(t *testing.T) {
	t.Parallel()
	goal := httptest.NewServer(goalprovider.New())
	defer goal.Close()
	hooks := &hookReceiver{sent: make(chan struct{}, 10)}
	hookSrv := httptest.NewServer(hooks)
	defer hookSrv.Close()

	agentKey := randomKey(t, "tg_test_agent_")
	patKey := randomKey(t, "tg_test_pat_")
	samKey := randomKey(t, "tg_test_sam_") // given to the server only as its digest
	otherKey := randomKey(t, "tg_test_other_")
	path := writeConfig(t, map[string]any{
		"listen": "127.0.0.1:0",
		"principals": []any{
			map[string]any{"id": "agent", "apiKeys": []string{agentKey}, "approvalMode": "approver"},
			map[string]any{"id": "other", "apiKeys": []string{otherKey}, "approvalMode": "approver"},
		},
		"approvers": []any{
			map[string]any{"id": "pat", "keys": []string{patKey}, "principals": []string{"agent"}},
			map[string]any{"id": "sam", "keySha256": []string{sha256Hex(samKey)}, "principals": []string{"other"}},
		},
		"approvals": map[string]any{"webhookUrl": hookSrv.URL + "/toolgate", "webhookSecret": webhookSecret,
			"publicUrl": "https://gateway.example"},
		"upstreams": map[string]string{"goal-data": goal.URL},
		"trust":     map[string]any{"goal-data": map[string]any{"paymentVerified": true, "endpointVerified": true}},
	})
	srv, base := startServer(t, []string{"-config", path})
	agent := client{t: t, base: base, key: agentKey}
	input := map[string]any{"goal": "<script>alert('pwned')</script>", "step": 2}

	// The digest the agent copies from its quote approves nothing.
	quoteID, digest, _ := agent.quote("goal-data")
	r := agent.call("goal-data", quoteID, digest, "e2e-1", input)
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	e := r.json(t)["error"].(map[string]any)
	assert.Equal(t, "approval_required", e["code"])
	assert.Equal(t, base+"/v1/approval-requests", e["approvalRequestsUrl"])

	// The agent asks.
	r = agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": input})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	req := r.json(t)
	id := req["id"].(string)
	assert.Equal(t, "pending", req["status"])
	assert.Equal(t, base+"/approvals/"+id, req["approveUrl"])

	created := hooks.next(t).event(t)
	assert.Equal(t, "approval_request.created", created["type"])
	data := created["data"].(map[string]any)
	assert.Equal(t, id, data["id"])
	assert.Equal(t, "https://gateway.example/approvals/"+id, data["approveUrl"], "the operator's public address")

	// The person opens the page: nothing shows until they sign in.
	pageURL := base + "/approvals/" + id
	pat := testbrowser.New(t)
	page := pat.Get(pageURL)
	require.Equal(t, http.StatusOK, page.Status)
	assert.NotContains(t, page.Body, "Goal Data")
	assert.NotContains(t, page.Body, "pwned")
	page = page.Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	text := page.Text()
	for _, want := range []string{"Goal Data", "agent", "0.1000 USD", "0.0100 USD", "0.1100 USD", digest, "<script>alert('pwned')</script>"} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, page.Body, "<script>", "the hostile input is shown escaped")
	assert.Contains(t, page.Body, "&lt;script&gt;")

	// Forged decisions change nothing: from another origin, or without the
	// session's token.
	decide := page.Form("decision")
	forged := url.Values{"action": {"decide"}, "decision": {"approve"}, "csrf": {decide.Values.Get("csrf")}}
	httpReq, err := http.NewRequest(http.MethodPost, pageURL, strings.NewReader(forged.Encode()))
	require.NoError(t, err)
	httpReq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	httpReq.Header.Set("Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, pat.Do(httpReq).Status, "a foreign origin")
	forged.Del("csrf")
	assert.Equal(t, http.StatusForbidden, pat.Post(page.URL, "", forged).Status, "no token")
	assert.Equal(t, "pending", agent.do(http.MethodGet, "/v1/approval-requests/"+id, nil).json(t)["status"])

	// Another approver's session decides nothing of this request.
	sam := testbrowser.New(t)
	samPage := sam.Get(pageURL).Form("key").Set("key", samKey).Submit("Sign in")
	assert.Equal(t, http.StatusNotFound, samPage.Status)
	assert.NotContains(t, samPage.Body, "Goal Data")

	// An agent cannot approve, even with the API.
	r = agent.do(http.MethodPost, "/v1/approval-requests/"+id+"/approve", nil)
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.Equal(t, "approver_required", r.json(t)["error"].(map[string]any)["code"])

	// The person approves.
	page = decide.Submit("Approve")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Contains(t, page.Text(), "decided by pat")
	decided := hooks.next(t).event(t)
	assert.Equal(t, "approval_request.decided", decided["type"])
	assert.Equal(t, "approved", decided["data"].(map[string]any)["status"])

	// The call runs with the grant, once.
	r = grantedCall(agent, "goal-data", quoteID, digest, id, "e2e-1", input)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	exec := r.json(t)
	assert.Equal(t, "completed", exec["status"], "%s", r.body)
	assert.Equal(t, "verified-demo-datum-2", exec["output"].(map[string]any)["datum"])

	r = grantedCall(agent, "goal-data", quoteID, digest, id, "e2e-2", input)
	assert.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Equal(t, "quote_used", r.json(t)["error"].(map[string]any)["code"])
	next, _, _ := agent.quote("goal-data")
	r = grantedCall(agent, "goal-data", next, digest, id, "e2e-3", input)
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, "%s", r.body)
	assert.Equal(t, "approval_grant_mismatch", r.json(t)["error"].(map[string]any)["code"])

	// An approver key is no caller key.
	approverAsCaller := client{t: t, base: base, key: patKey}
	r = approverAsCaller.do(http.MethodPost, "/v1/tools/goal-data/quote", nil)
	assert.Equal(t, http.StatusUnauthorized, r.status)

	assert.Equal(t, 0, srv.stop(exitTimeout))
	out := srv.stdout.String() + srv.stderr.String()
	for _, secret := range []string{agentKey, patKey, samKey, otherKey, strings.TrimPrefix(webhookSecret, "whsec_")} {
		assert.NotContains(t, out, secret, "no key and no webhook secret in any output")
	}
	srv.logLines()
}

// grantedCall calls with the digest and the grant of approval request grant.
func grantedCall(c client, slug, quoteID, digest, grant, idemKey string, input any) response {
	c.t.Helper()
	return c.do(http.MethodPost, "/v1/tools/"+slug+"/call", map[string]any{
		"quoteId":  quoteID,
		"input":    input,
		"approval": map[string]any{"manifestDigest": digest, "grantId": grant},
	}, "Idempotency-Key", idemKey)
}

// TestServerRefusesAKeyThatIsBothKinds: a key given to a principal and to
// an approver stops the server at start, in one line that names both
// places and not the key.
func TestServerRefusesAKeyThatIsBothKinds(t *testing.T) {
	t.Parallel()
	shared := randomKey(t, "tg_test_shared_")
	path := writeConfig(t, map[string]any{
		"principals": []any{map[string]any{"id": "agent", "apiKeys": []string{shared}, "approvalMode": "approver"}},
		"approvers":  []any{map[string]any{"id": "pat", "keys": []string{shared}, "principals": []string{"agent"}}},
	})
	srv := startProcess(t, []string{"-config", path})
	assert.Equal(t, exitUsage, srv.wait(exitTimeout))
	stderr := srv.stderr.String()
	assert.Equal(t, "toolgate: "+path+": config: approvers[0].keys[0]: this key is also principals[0].apiKeys[0]: a key is a caller key or an approver key, never both\n", stderr)
	assert.NotContains(t, stderr, shared)
	assert.Empty(t, srv.stdout.String())
}

// TestServerOfflineDevelopmentSetupHasAnApprover: the development setup
// prints an agent's key and an approver's, and they work as the README
// says: the agent asks, the approver approves, the call runs.
func TestServerOfflineDevelopmentSetupHasAnApprover(t *testing.T) {
	t.Parallel()
	srv, base := startServer(t, []string{"-offline", "-listen", "127.0.0.1:0"})
	agentKey := strings.TrimPrefix(srv.waitLine("export TOOLGATE_AGENT_KEY=", 10*time.Second), "export TOOLGATE_AGENT_KEY=")
	approverKey := strings.TrimPrefix(srv.waitLine("export TOOLGATE_APPROVER_KEY=", 10*time.Second), "export TOOLGATE_APPROVER_KEY=")
	require.Regexp(t, `^tg_dev_agent_[0-9a-f]{32}$`, agentKey)
	require.Regexp(t, `^tg_dev_approver_[0-9a-f]{32}$`, approverKey)
	assert.Contains(t, srv.stdout.String(), base+"/approvals")

	agent := client{t: t, base: base, key: agentKey}
	you := client{t: t, base: base, key: approverKey}
	quoteID, digest, _ := agent.quote("earthquake-search")
	input := map[string]any{"starttime": "2024-09-25"}
	r := agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": input})
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	id := r.json(t)["id"].(string)
	list := you.do(http.MethodGet, "/v1/approval-requests", nil).json(t)["approvalRequests"].([]any)
	require.Len(t, list, 1)
	r = you.do(http.MethodPost, "/v1/approval-requests/"+id+"/approve", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = grantedCall(agent, "earthquake-search", quoteID, digest, id, "dev-1", input)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"])

	assert.Equal(t, 0, srv.stop(exitTimeout))
	assert.NotContains(t, srv.stderr.String(), agentKey)
	assert.NotContains(t, srv.stderr.String(), approverKey)
}

// TestREADMEApproverWalkThrough runs the README's first approval against
// the development setup, as a developer would paste it: the agent asks with
// the getting started's commands, the person signs in on the page the
// request links with the approver key and approves, and the agent's call
// with the grant runs and is charged the quoted amount. Then the same with
// the approver-mode section's commands that approve over the API.
func TestREADMEApproverWalkThrough(t *testing.T) {
	t.Parallel()
	requireShellTools(t)
	blocks := shellBlocks(readmeSection(t, "Getting started"))
	require.Len(t, blocks, 5, "install, start, paid call, asking for approval, the call with the grant")
	ask, callWithGrant := blocks[3], blocks[4]
	approveWithAPI := shellBlocks(readmeSection(t, "Approver mode: people approve, agents ask"))
	require.Len(t, approveWithAPI, 1, "approving with the API")

	srv, base := startServer(t, []string{"-offline", "-listen", "127.0.0.1:0"})
	agentKey := strings.TrimPrefix(srv.waitLine("export TOOLGATE_AGENT_KEY=", 10*time.Second), "export TOOLGATE_AGENT_KEY=")
	approverKey := strings.TrimPrefix(srv.waitLine("export TOOLGATE_APPROVER_KEY=", 10*time.Second), "export TOOLGATE_APPROVER_KEY=")
	keys := []string{"TOOLGATE_AGENT_KEY=" + agentKey, "TOOLGATE_APPROVER_KEY=" + approverKey}
	here := func(script string) string { return strings.ReplaceAll(script, "http://127.0.0.1:8080", base) }

	// asks runs the agent's commands and returns what the shell they ran in
	// holds afterwards (QUOTE_ID, DIGEST, REQUEST_ID), and the request.
	asks := func(t *testing.T) ([]string, map[string]any) {
		t.Helper()
		out := runScript(t, here(ask)+"\necho \"QUOTE_ID=$QUOTE_ID DIGEST=$DIGEST REQUEST_ID=$REQUEST_ID\"", keys...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, "the request, then the shell's variables: %s", out)
		var request map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &request), "%s", out)
		assert.Equal(t, "pending", request["status"], "the request waits")
		return strings.Fields(lines[1]), request
	}

	t.Run("on the page", func(t *testing.T) {
		vars, request := asks(t)
		id := request["id"].(string)
		approveURL := request["approveUrl"].(string)
		require.Equal(t, base+"/approvals/"+id, approveURL, "the request links its page")

		you := testbrowser.New(t)
		page := you.Get(approveURL).Form("key").Set("key", approverKey).Submit("Sign in")
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		require.True(t, page.HasForm("decision"), "signed in with the approver key, the request shows: %s", page.Body)
		page = page.Form("decision").Submit("Approve")
		require.Equal(t, http.StatusOK, page.Status, page.Body)
		assert.Contains(t, page.Text(), "decided by you")

		out := runScript(t, here(callWithGrant), append(keys, vars...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, "the call, the spend: %s", out)
		var call, spend map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &call), "%s", out)
		require.NoError(t, json.Unmarshal([]byte(lines[1]), &spend), "%s", out)
		assert.Equal(t, "completed", call["status"], "the call runs with the grant: %s", out)
		assert.Equal(t, "0.1100", call["cost"].(map[string]any)["totalUsd"], "%s", out)
		assert.Equal(t, "0.1100", spend["totalUsd"], "charged the quoted amount: %s", out)
	})

	t.Run("with the API", func(t *testing.T) {
		vars, _ := asks(t)
		out := runScript(t, here(approveWithAPI[0]+"\n"+callWithGrant), append(keys, vars...)...)
		assert.Contains(t, out, `"status":"approved"`, "the person approves")
		assert.Contains(t, out, `"decidedBy":"you"`)
		assert.Contains(t, out, `"status":"completed"`, "the call runs with the grant: %s", out)
	})
	assert.Equal(t, 0, srv.stop(exitTimeout))
}
