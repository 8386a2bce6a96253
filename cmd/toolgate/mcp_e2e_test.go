package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testproc"
)

// agent is the person at an MCP client: it approves every call it is asked
// about, and remembers the questions.
type agent struct {
	mu        sync.Mutex
	questions []string
}

func (a *agent) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.questions = append(a.questions, req.Params.Message)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "remember": "once"}}, nil
}

func (a *agent) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.questions...)
}

// withKey sends every request of an MCP client with a caller's key.
type withKey struct{ key string }

func (k withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpTools lists an MCP session's tools by name.
func mcpTools(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		out[tool.Name] = tool
	}
	return out
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, tool string, args any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args, Meta: meta})
	require.NoError(t, err)
	return res
}

// completed returns a completed call's structured content.
func completed(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	require.False(t, res.IsError, "%v", res.Content)
	out, ok := res.StructuredContent.(map[string]any)
	require.True(t, ok, "structured content %T", res.StructuredContent)
	return out
}

// TestMCPOverStreamableHTTP connects the SDK's client to /mcp of the built
// server, as two principals, and stops the server with a session open.
func TestMCPOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	aliceKey := randomKey(t, "tg_test_alice_")
	bobKey := randomKey(t, "tg_test_bob_")
	path := writeConfig(t, map[string]any{
		"listen": "127.0.0.1:0",
		"principals": []any{
			map[string]any{"id": "alice", "apiKeys": []string{aliceKey}},
			map[string]any{"id": "bob", "apiKeys": []string{bobKey},
				"spendControls": map[string]any{"tools": map[string]any{"earthquake-search": map[string]any{"allowed": false}}}},
		},
	})
	srv, base := startServer(t, []string{"-config", path, "-offline"})
	ctx := context.Background()
	connect := func(key string, a *agent) *mcp.ClientSession {
		opts := &mcp.ClientOptions{}
		if a != nil {
			opts.ElicitationHandler = a.elicit
		}
		transport := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: withKey{key}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts).Connect(ctx, transport, nil)
		require.NoError(t, err)
		return cs
	}

	person := &agent{}
	alice := connect(aliceKey, person)
	tools := mcpTools(t, alice)
	assert.Len(t, tools, 4, "the four callable built-ins: offline, goal-data's demo provider counts as verified")
	digest, _ := tools["earthquake-search"].Meta["toolgate/manifestDigest"].(string)
	require.NotEmpty(t, digest)

	// The person at the client approves; the call runs over real HTTP.
	res := mcpCall(t, alice, "earthquake-search", map[string]any{"starttime": "2024-09-25", "endtime": "2024-09-30"}, nil)
	out := completed(t, res)
	assert.Len(t, out["features"], 10)
	assert.Equal(t, []string{"Approve Earthquake Search for $0.0000? version " + digest}, person.asked())

	// An agent's own key runs the call once.
	meta := mcp.Meta{"toolgate/approval": digest, "toolgate/idempotencyKey": "e2e-order-1"}
	first := mcpCall(t, alice, "earthquake-search", map[string]any{"starttime": "2024-09-26"}, meta)
	again := mcpCall(t, alice, "earthquake-search", map[string]any{"starttime": "2024-09-26"}, meta)
	completed(t, first)
	assert.Equal(t, first.Meta["toolgate/executionId"], again.Meta["toolgate/executionId"])

	// bob's spend controls block the tool: he does not see it.
	bob := connect(bobKey, nil)
	assert.NotContains(t, mcpTools(t, bob), "earthquake-search")
	require.NoError(t, bob.Close())

	// No key, no MCP; the HTTP API still answers beside it.
	r := client{t: t, base: base}.do(http.MethodPost, "/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer"))
	assert.Equal(t, http.StatusOK, client{t: t, base: base}.do(http.MethodGet, "/healthz", nil).status)

	// SIGTERM with alice's session and its event stream open: a clean stop.
	assert.Equal(t, 0, srv.stop(exitTimeout))
	_ = alice.Close()
	for _, key := range []string{aliceKey, bobKey} {
		assert.NotContains(t, srv.stderr.String(), key)
		assert.NotContains(t, srv.stdout.String(), key)
	}
	srv.logLines() // every line JSON
}

// TestMCPOverStdio spawns "toolgate mcp" as an MCP client would and speaks
// MCP to it over its stdin and stdout.
func TestMCPOverStdio(t *testing.T) {
	t.Parallel()
	bin := toolgateBinary(t)
	ctx := context.Background()
	stderr := &testproc.SyncBuffer{}
	cmd := exec.Command(bin, "mcp", "-offline")
	cmd.Stderr = stderr
	person := &agent{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: person.elicit}).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)

	tools := mcpTools(t, cs)
	assert.ElementsMatch(t, []string{"earthquake-search", "exchange-rates", "goal-data", "public-holidays"}, keysOf(tools))
	rates := tools["exchange-rates"]
	assert.Contains(t, rates.Description, "Output: untrusted data from Frankfurter")

	res := mcpCall(t, cs, "public-holidays", map[string]any{"countryCode": "PT", "year": 2027}, nil)
	items, _ := completed(t, res)["items"].([]any)
	assert.NotEmpty(t, items, "the array output, wrapped as items")
	assert.Len(t, person.asked(), 1)

	res = mcpCall(t, cs, "public-holidays", map[string]any{"countryCode": "PT", "year": 2027},
		mcp.Meta{"toolgate/approval": "sha256:" + strings.Repeat("0", 64)})
	assert.True(t, res.IsError, "another version's digest approves nothing")

	require.NoError(t, cs.Close()) // closes stdin, and waits for the process to exit
	require.NotNil(t, cmd.ProcessState)
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	var sawStopped bool
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "stderr holds only JSON log lines: %s", line)
		sawStopped = sawStopped || rec["msg"] == "stopped"
	}
	assert.True(t, sawStopped, "%s", stderr)
}

// TestMCPStdioWithAConfig serves one principal of a config file, and
// refuses a missing or unknown principal.
func TestMCPStdioWithAConfig(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, map[string]any{
		"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{randomKey(t, "tg_test_")},
			"spendControls": map[string]any{"tools": map[string]any{"exchange-rates": map[string]any{"allowed": false}}}}},
	})
	cmd := exec.Command(toolgateBinary(t), "mcp", "-config", path, "-principal", "alice", "-offline")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"earthquake-search", "goal-data", "public-holidays"}, keysOf(mcpTools(t, cs)))
	require.NoError(t, cs.Close())

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "-config", path}, "toolgate mcp: -principal ID is required with a config\n"},
		{[]string{"mcp", "-config", path, "-principal", "mallory"}, `toolgate mcp: -principal: the config has no principal "mallory"` + "\n"},
	} {
		p := startProcess(t, tc.args)
		assert.Equal(t, exitUsage, p.wait(exitTimeout))
		assert.Equal(t, tc.want, p.stderr.String())
		assert.Empty(t, p.stdout.String(), "nothing but protocol messages on stdout")
	}
}

func keysOf(tools map[string]*mcp.Tool) []string {
	var out []string
	for name := range tools {
		out = append(out, name)
	}
	return out
}
