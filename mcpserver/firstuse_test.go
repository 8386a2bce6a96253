package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// agentMCPKey is the key of agent, a principal in approver mode.
const agentMCPKey = "tg_test_agent_for_mcp_5c0d1e"

// firstUseServer serves, on one real HTTP server, the MCP handler at /mcp
// and the HTTP API beside it, for a gateway with the paid echo tool
// (first_use) whose principal agent is approved by pat. It returns the
// server's URL.
func firstUseServer(t *testing.T, gw *toolgatetest.Gateway) string {
	t.Helper()
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("agent", agentMCPKey))
	require.NoError(t, keys.AddApproverKey("pat", patApproverKey))
	h, err := mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{Authenticator: keys})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle("/", httpapi.NewHandler(gw.Gateway, &httpapi.Options{Authenticator: keys}))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return srv.URL
}

// apiDo sends an HTTP API request with key and decodes its JSON answer.
func apiDo(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return resp.StatusCode, out
}

// pendingRequest is the one request pat finds waiting, over the HTTP API.
func pendingRequest(t *testing.T, base string) string {
	t.Helper()
	status, list := apiDo(t, http.MethodGet, base+"/v1/approval-requests?status=pending", patApproverKey, "")
	require.Equal(t, http.StatusOK, status, "%v", list)
	pending := list["approvalRequests"].([]any)
	require.Len(t, pending, 1)
	return pending[0].(map[string]any)["id"].(string)
}

// An approver who approves an MCP call of a first_use tool with {} approves
// that call only: the agent's next tools/call of the tool, with other
// arguments, does not run and asks again. Approving with remember
// first_use lets the later calls of this version through.
func TestMCPApproveWithNoRememberIsThisCallOnly(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{
		Tools:  []*registry.Tool{paidEcho()},
		Config: &toolgate.Config{Approvers: approvers, QuoteTTL: 10 * time.Minute},
	})
	base := firstUseServer(t, gw)
	cs := connectHTTP(t, base+"/mcp", agentMCPKey, nil)

	// The first call asks pat, who approves it over the API, with {}.
	requireToolError(t, call(t, cs, "paid-echo", `{"v":"one"}`, nil), toolgatetype.CodeApprovalRequired)
	id := pendingRequest(t, base)
	status, decided := apiDo(t, http.MethodPost, base+"/v1/approval-requests/"+id+"/approve", patApproverKey, "{}")
	require.Equal(t, http.StatusOK, status, "%v", decided)
	assert.Equal(t, "once", decided["remember"])

	// The call made again runs, on the grant.
	requireCompleted(t, call(t, cs, "paid-echo", `{"v":"one"}`, nil))
	gw.Upstream.RequireCalls(t, 1)

	// The next call does not run: it asks again.
	msg := requireToolError(t, call(t, cs, "paid-echo", `{"v":"two"}`, nil), toolgatetype.CodeApprovalRequired)
	assert.Contains(t, msg, "Nothing was run or charged.")
	gw.Upstream.RequireCalls(t, 1)
	gw.Clock.Advance(time.Second)
	gw.RequireSpent(t, "agent", "0.1100")
	status, used := apiDo(t, http.MethodGet, base+"/v1/approval-requests/"+id, agentMCPKey, "")
	require.Equal(t, http.StatusOK, status, "%v", used)
	assert.Equal(t, "used", used["status"])
	assert.Equal(t, "once", used["remember"])

	// Approved with "don't ask again for this version": it runs, and so
	// does the call after, with no one asked.
	id = pendingRequest(t, base)
	status, decided = apiDo(t, http.MethodPost, base+"/v1/approval-requests/"+id+"/approve", patApproverKey, `{"remember":"first_use"}`)
	require.Equal(t, http.StatusOK, status, "%v", decided)
	requireCompleted(t, call(t, cs, "paid-echo", `{"v":"two"}`, nil))
	requireCompleted(t, call(t, cs, "paid-echo", `{"v":"three"}`, nil))
	gw.Upstream.RequireCalls(t, 3)
	status, list := apiDo(t, http.MethodGet, base+"/v1/approval-requests?status=pending", patApproverKey, "")
	require.Equal(t, http.StatusOK, status, "%v", list)
	assert.Empty(t, list["approvalRequests"], "nobody was asked about the third call")
}
