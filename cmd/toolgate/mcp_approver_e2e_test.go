package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testproc"
)

// sentTo fails t unless err sends the client to an approval page, and
// returns the URL elicitation.
func sentTo(t *testing.T, err error) *mcp.ElicitParams {
	t.Helper()
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "want the URL-elicitation-required error, got %v", err)
	require.EqualValues(t, mcp.CodeURLElicitationRequired, rpcErr.Code)
	var data struct {
		Elicitations []*mcp.ElicitParams `json:"elicitations"`
	}
	require.NoError(t, json.Unmarshal(rpcErr.Data, &data))
	require.Len(t, data.Elicitations, 1)
	require.Equal(t, "url", data.Elicitations[0].Mode)
	return data.Elicitations[0]
}

// quakes is an earthquake search the recordings answer with ten features.
var quakes = map[string]any{"starttime": "2024-09-25", "endtime": "2024-09-30"}

// TestMCPApproverModeOverStreamableHTTP runs the server binary with an
// agent in approver mode, on protocol 2025-11-25 in a session: its MCP call
// sends it to the approval page, a person approves over the HTTP API with
// an approver key, the session is told the request was decided
// (notifications/elicitation/complete), and the agent's retry runs.
func TestMCPApproverModeOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	agentKey := randomKey(t, "tg_test_agent_")
	patKey := randomKey(t, "tg_test_pat_")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"principals": []any{map[string]any{"id": "agent", "apiKeys": []string{agentKey}, "approvalMode": "approver"}},
		"approvers":  []any{map[string]any{"id": "pat", "keys": []string{patKey}, "principals": []string{"agent"}}},
	})
	srv, base := startServer(t, []string{"-config", path, "-offline"})
	ctx := context.Background()
	person := &agent{}
	decided := make(chan string, 1)
	transport := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: withKey{agentKey}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: person.elicit,
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
		ElicitationCompleteHandler: func(_ context.Context, n *mcp.ElicitationCompleteNotificationRequest) {
			decided <- n.Params.ElicitationID
		},
	}).Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	require.NotEmpty(t, cs.ID(), "a session")
	digest, _ := mcpTools(t, cs)["earthquake-search"].Meta["toolgate/manifestDigest"].(string)
	require.NotEmpty(t, digest)

	// The call sends the client to the page where a person decides.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "earthquake-search", Arguments: quakes, Meta: mcp.Meta{"toolgate/approval": digest}})
	e := sentTo(t, err)
	id := e.ElicitationID
	assert.Equal(t, base+"/approvals/"+id, e.URL)
	assert.Contains(t, e.Message, "Approve Earthquake Search for $0.0000? version "+digest)
	page := client{t: t, base: base}.do(http.MethodGet, "/approvals/"+id, nil)
	assert.Equal(t, http.StatusOK, page.status, "the page is there")
	assert.Contains(t, string(page.body), "Sign in")

	// Again before anyone decides: the same request.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "earthquake-search", Arguments: quakes})
	assert.Equal(t, id, sentTo(t, err).ElicitationID)

	// The person approves with their key, over the HTTP API.
	pat := client{t: t, base: base, key: patKey}
	select {
	case early := <-decided:
		t.Fatalf("told %s was decided before anyone decided", early)
	default:
	}
	r := pat.do(http.MethodPost, "/v1/approval-requests/"+id+"/approve", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "approved", r.json(t)["status"])
	select {
	case got := <-decided:
		assert.Equal(t, id, got)
	case <-time.After(15 * time.Second):
		t.Fatal("the session was not told the request was decided")
	}

	// The retry runs with the grant.
	res := mcpCall(t, cs, "earthquake-search", quakes, nil)
	assert.Len(t, completed(t, res)["features"], 10)
	r = client{t: t, base: base, key: agentKey}.do(http.MethodGet, "/v1/approval-requests/"+id, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	got := r.json(t)
	assert.Equal(t, "used", got["status"])
	assert.Equal(t, "pat", got["decidedBy"])
	assert.Equal(t, res.Meta["toolgate/executionId"], got["executionId"])
	assert.Empty(t, person.asked(), "no form was shown")

	require.NoError(t, cs.Close())
	assert.Equal(t, 0, srv.stop(exitTimeout))
	for _, key := range []string{agentKey, patKey} {
		assert.NotContains(t, srv.stderr.String(), key)
		assert.NotContains(t, srv.stdout.String(), key)
	}
}

// TestMCPApproverModeOverStdio runs "toolgate mcp" for an agent in
// approver mode on a SQLite file that a server shares: the stdio process
// makes the request and links it under the configured publicUrl, the
// person approves on the server, and the stdio process finds the grant in
// the store. Without a publicUrl, the tool error says what is missing.
func TestMCPApproverModeOverStdio(t *testing.T) {
	t.Parallel()
	agentKey := randomKey(t, "tg_test_agent_")
	patKey := randomKey(t, "tg_test_pat_")
	db := "sqlite:" + filepath.Join(t.TempDir(), "toolgate.db")
	config := func(publicURL string) string {
		cfg := map[string]any{
			"listen":     "127.0.0.1:0",
			"storage":    db,
			"principals": []any{map[string]any{"id": "agent", "apiKeys": []string{agentKey}, "approvalMode": "approver"}},
			"approvers":  []any{map[string]any{"id": "pat", "keys": []string{patKey}, "principals": []string{"agent"}}},
		}
		if publicURL != "" {
			cfg["approvals"] = map[string]any{"publicUrl": publicURL}
		}
		return writeConfig(t, cfg)
	}
	srv, base := startServer(t, []string{"-config", config(""), "-offline"})
	ctx := context.Background()
	stdio := func(path string, c *mcp.Client) (*mcp.ClientSession, *testproc.SyncBuffer) {
		stderr := &testproc.SyncBuffer{}
		cmd := exec.Command(toolgateBinary(t), "mcp", "-config", path, "-principal", "agent", "-offline")
		cmd.Stderr = stderr
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err)
		return cs, stderr
	}

	// No address for the page: the tool error says so, and names the request.
	bare, _ := stdio(config(""), mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil))
	res := mcpCall(t, bare, "earthquake-search", map[string]any{"starttime": "2024-09-26"}, nil)
	require.True(t, res.IsError)
	msg := res.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, msg, "approval_required: ")
	assert.Contains(t, msg, "approvals.publicUrl")
	require.NoError(t, bare.Close())

	// With one: the page on the server, which shares the store. The
	// client (protocol 2026-07-28) sends its user there, an approver
	// approves, and the client makes the call again with its requestState.
	var sentTo []*mcp.ElicitParams
	pat := client{t: t, base: base, key: patKey}
	opener := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			sentTo = append(sentTo, req.Params)
			if req.Params.Mode != "url" {
				return nil, errors.New("a form was shown in approver mode")
			}
			r, err := pat.send(http.MethodPost, "/v1/approval-requests/"+req.Params.ElicitationID+"/approve", nil)
			if err != nil || r.status != http.StatusOK {
				return nil, errors.New("the approval failed")
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
	})
	cs, stderr := stdio(config(base), opener)
	res = mcpCall(t, cs, "earthquake-search", quakes, nil)
	assert.Len(t, completed(t, res)["features"], 10)
	require.Len(t, sentTo, 1)
	e := sentTo[0]
	assert.Equal(t, base+"/approvals/"+e.ElicitationID, e.URL)
	r := pat.do(http.MethodGet, "/v1/approval-requests/"+e.ElicitationID, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "used", r.json(t)["status"])
	require.NoError(t, cs.Close())
	assert.Equal(t, 0, srv.stop(exitTimeout))
	for _, key := range []string{agentKey, patKey} {
		assert.NotContains(t, stderr.String(), key)
		assert.NotContains(t, srv.stderr.String(), key)
	}
}
