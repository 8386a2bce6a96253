package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPTypeScriptClient runs the TypeScript MCP SDK's client, an MCP
// client toolgate shares no code with, against /mcp of the server binary.
// It speaks protocol 2025-11-25, in sessions, as before 2026-07-28 was
// served beside it: it lists the tools, a call of a principal in caller
// mode asks the person at the client with a form within the call, and a
// call of one in approver mode sends the client to the approval page,
// after which the session is told the request was decided
// (notifications/elicitation/complete) and the call made again runs.
//
// The client is testdata/mcp-ts/client.mjs, the SDK's version pinned in
// its package-lock.json. It needs node and npm; without them it is
// skipped, except in CI.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	dir := npmInstall(t, "testdata/mcp-ts")

	callerKey := randomKey(t, "tg_test_ts_caller_")
	agentKey := randomKey(t, "tg_test_ts_agent_")
	patKey := randomKey(t, "tg_test_ts_pat_")
	path := writeConfig(t, map[string]any{
		"listen": "127.0.0.1:0",
		"principals": []any{
			map[string]any{"id": "caller", "apiKeys": []string{callerKey}},
			map[string]any{"id": "agent", "apiKeys": []string{agentKey}, "approvalMode": "approver"},
		},
		"approvers": []any{map[string]any{"id": "pat", "keys": []string{patKey}, "principals": []string{"agent"}}},
	})
	srv, base := startServer(t, []string{"-config", path, "-offline"})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLGATE_MCP_URL="+base+"/mcp",
		"TOOLGATE_CALLER_KEY="+callerKey, "TOOLGATE_AGENT_KEY="+agentKey, "TOOLGATE_APPROVER_KEY="+patKey)
	stdout, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, exit.Stderr)
	}
	require.NoError(t, err)

	var out struct {
		Caller struct {
			ProtocolVersion string   `json:"protocolVersion"`
			SessionID       string   `json:"sessionId"`
			Tools           []string `json:"tools"`
			Asked           []string `json:"asked"`
			Result          toolResult
		} `json:"caller"`
		Approver struct {
			Elicitation struct {
				Mode, URL, ElicitationID string
			} `json:"elicitation"`
			ApproveStatus int      `json:"approveStatus"`
			Completed     []string `json:"completed"`
			Result        toolResult
		} `json:"approver"`
	}
	require.NoError(t, json.Unmarshal(stdout, &out), "%s", stdout)

	c := out.Caller
	assert.Equal(t, "2025-11-25", c.ProtocolVersion)
	assert.NotEmpty(t, c.SessionID, "a session")
	assert.Subset(t, c.Tools, []string{"earthquake-search", "exchange-rates", "public-holidays"})
	require.Len(t, c.Asked, 1)
	assert.Contains(t, c.Asked[0], "Approve Earthquake Search for $0.0000? version sha256:")
	assert.False(t, c.Result.IsError)
	assert.Len(t, c.Result.StructuredContent["features"], 10)
	assert.NotEmpty(t, c.Result.Meta["toolgate/executionId"])

	a := out.Approver
	assert.Equal(t, "url", a.Elicitation.Mode)
	assert.Equal(t, base+"/approvals/"+a.Elicitation.ElicitationID, a.Elicitation.URL)
	assert.Equal(t, 200, a.ApproveStatus)
	assert.Equal(t, []string{a.Elicitation.ElicitationID}, a.Completed, "told once the request was decided")
	assert.False(t, a.Result.IsError)
	assert.Len(t, a.Result.StructuredContent["features"], 10)

	assert.Equal(t, 0, srv.stop(exitTimeout))
	for _, key := range []string{callerKey, agentKey, patKey} {
		assert.NotContains(t, srv.stderr.String(), key)
	}
}

// toolResult is a tools/call result as a client reads it.
type toolResult struct {
	IsError           bool           `json:"isError"`
	StructuredContent map[string]any `json:"structuredContent"`
	Meta              map[string]any `json:"_meta"`
}
