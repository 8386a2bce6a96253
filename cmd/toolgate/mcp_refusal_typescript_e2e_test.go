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

// TestMCPRefusalsReachTypeScriptClients runs the TypeScript MCP SDK's
// clients, 1.x at protocol 2025-11-25 (testdata/mcp-ts) and v2 at
// 2026-07-28 (testdata/mcp-ts2, @modelcontextprotocol/client), each pinned
// by its package-lock.json, against /mcp of the server binary, and has them
// call tools past spend limits. A client checks structured content against
// the tool's output schema, on errors too (1.x does), so a refusal that
// carried one was a protocol error (-32602 "Structured content does not
// match the tool's output schema") instead of the refusal. Each refusal
// must reach the client as a tool error whose text is the HTTP error body
// as JSON, with the body again in _meta["toolgate/error"] and no
// structured content: the principal's daily limit on goal-data (which
// declares an output schema) and on an MCP server's tool that declares
// none, and a team budget the principal counts in on goal-data.
func TestMCPRefusalsReachTypeScriptClients(t *testing.T) {
	t.Parallel()
	sdks := []struct {
		dir, protocol string
	}{
		{"testdata/mcp-ts", "2025-11-25"},
		{"testdata/mcp-ts2", "2026-07-28"},
	}
	dirs := make([]string, len(sdks))
	for i, sdk := range sdks {
		dirs[i] = npmInstall(t, sdk.dir)
	}

	// Each SDK has a principal of its own with a daily limit of $0.1050,
	// and one in a budget of its own of $0.1500 a day: one goal-data call
	// ($0.1000, no fee) fits, a second, or a note ($0.0100) after it, does
	// not.
	var principals, budgets []any
	keys := make([]map[string]string, len(sdks))
	for i := range sdks {
		n := string(rune('1' + i))
		keys[i] = map[string]string{
			"spender": randomKey(t, "tg_test_ts_spender_"),
			"member":  randomKey(t, "tg_test_ts_member_"),
		}
		principals = append(principals,
			map[string]any{"id": "spender-" + n, "apiKeys": []string{keys[i]["spender"]},
				"spendControls": map[string]any{"dailyLimitUsd": "0.1050"}},
			map[string]any{"id": "member-" + n, "apiKeys": []string{keys[i]["member"]}})
		budgets = append(budgets, map[string]any{"id": "team-" + n, "name": "Team " + n,
			"members": []string{"member-" + n}, "dailyLimitUsd": "0.1500"})
	}
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"feeRate":    "0",
		"principals": principals,
		"budgets":    budgets,
		"trust":      map[string]any{"notes.write-note": map[string]any{"paymentVerified": true, "endpointVerified": true}},
		"mcpServers": []any{notesServer(t, t.TempDir())},
	})
	srv, base := startServer(t, []string{"-config", path, "-offline"}, "TG_E2E_NOTES_TOKEN=unused")
	untilPastMidnight(t, 3*time.Minute) // the limits are a day's

	goal := func(n int) map[string]any {
		return map[string]any{"name": "goal-data", "arguments": map[string]any{"goal": "refusals", "step": n}}
	}
	note := map[string]any{"name": "notes.write-note", "arguments": map[string]any{"note": "over the limit"}}
	calls, err := json.Marshal(map[string]any{
		"spender": []any{goal(1), goal(2), note},
		"member":  []any{goal(1), goal(2)},
	})
	require.NoError(t, err)

	for i, sdk := range sdks {
		t.Run(sdk.protocol, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", "refusals.mjs")
			cmd.Dir = dirs[i]
			cmd.Env = append(os.Environ(), "TOOLGATE_MCP_URL="+base+"/mcp", "TOOLGATE_CALLS="+string(calls),
				"TOOLGATE_SPENDER_KEY="+keys[i]["spender"], "TOOLGATE_MEMBER_KEY="+keys[i]["member"])
			stdout, err := cmd.Output()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Fatalf("the TypeScript client failed: %v\n%s", err, exit.Stderr)
			}
			require.NoError(t, err)
			var out map[string]struct {
				ProtocolVersion string          `json:"protocolVersion"`
				OutputSchemas   map[string]bool `json:"outputSchemas"`
				Results         []refusalResult `json:"results"`
			}
			require.NoError(t, json.Unmarshal(stdout, &out), "%s", stdout)

			spender, member := out["spender"], out["member"]
			for _, who := range []string{"spender", "member"} {
				assert.Equal(t, sdk.protocol, out[who].ProtocolVersion, who)
			}
			assert.True(t, spender.OutputSchemas["goal-data"], "goal-data declares an output schema")
			assert.False(t, spender.OutputSchemas["notes.write-note"], "the note tool declares none")

			require.Len(t, spender.Results, 3)
			spender.Results[0].requireCompleted(t)
			body := spender.Results[1].requireRefusal(t)
			assert.Equal(t, []string{"Call would exceed global daily limit of $0.1050"}, body.Error.Violations)
			assert.Nil(t, body.Error.Budget, "no budget refused")
			body = spender.Results[2].requireRefusal(t)
			assert.Equal(t, []string{"Call would exceed global daily limit of $0.1050"}, body.Error.Violations)

			require.Len(t, member.Results, 2)
			member.Results[0].requireCompleted(t)
			body = member.Results[1].requireRefusal(t)
			assert.Equal(t, []string{"Call would exceed the Team " + string(rune('1'+i)) + " budget's daily limit of $0.1500"}, body.Error.Violations)
			require.NotNil(t, body.Error.Budget)
			assert.Equal(t, "team-"+string(rune('1'+i)), body.Error.Budget.ID)
			assert.Equal(t, "daily", body.Error.Budget.Window)
			assert.Equal(t, "0.1500", body.Error.Budget.LimitUSD)
			assert.Equal(t, "0.1000", body.Error.Budget.UsedUSD)
			assert.Equal(t, "0.1000", body.Error.Budget.RequestedUSD)
			assert.False(t, body.Error.Budget.ResetsAt.IsZero())
		})
	}

	assert.Equal(t, 0, srv.stop(exitTimeout))
	for _, k := range keys {
		for _, key := range k {
			assert.NotContains(t, srv.stderr.String(), key)
		}
	}
}

// refusalResult is a tools/call result as a TypeScript client returned it,
// or what it threw.
type refusalResult struct {
	IsError           bool `json:"isError"`
	Content           []struct{ Type, Text string }
	StructuredContent map[string]any `json:"structuredContent"`
	Meta              map[string]any `json:"_meta"`
	Thrown            *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"thrown"`
}

func (r refusalResult) requireCompleted(t *testing.T) {
	t.Helper()
	require.Nil(t, r.Thrown, "the client threw")
	require.False(t, r.IsError, "%v", r.Content)
	assert.NotEmpty(t, r.StructuredContent, "the output, checked by the client against the output schema")
}

// requireRefusal fails t unless r is a refusal of spend_limit_exceeded as
// every client takes it, and returns the error body its text holds.
func (r refusalResult) requireRefusal(t *testing.T) refusalBody {
	t.Helper()
	require.Nil(t, r.Thrown, "the client threw instead of returning the refusal")
	require.True(t, r.IsError)
	assert.Nil(t, r.StructuredContent, "a refusal has no structured content")
	require.Len(t, r.Content, 1)
	require.Equal(t, "text", r.Content[0].Type)
	var body refusalBody
	require.NoError(t, json.Unmarshal([]byte(r.Content[0].Text), &body), "the text is the HTTP error body: %s", r.Content[0].Text)
	assert.Equal(t, "spend_limit_exceeded", body.Error.Code)
	assert.Regexp(t, `^the call would (break your spend controls|exceed a budget: Call would exceed .+)$`, body.Error.Message)
	meta, err := json.Marshal(r.Meta["toolgate/error"])
	require.NoError(t, err)
	assert.JSONEq(t, r.Content[0].Text, string(meta), "the same body in _meta")
	return body
}

// refusalBody is the HTTP API's error body, read as a client written in
// another language reads it: by its JSON names.
type refusalBody struct {
	Error struct {
		Code       string   `json:"code"`
		Message    string   `json:"message"`
		Violations []string `json:"violations"`
		Budget     *struct {
			ID           string    `json:"id"`
			Window       string    `json:"window"`
			LimitUSD     string    `json:"limitUsd"`
			UsedUSD      string    `json:"usedUsd"`
			RequestedUSD string    `json:"requestedUsd"`
			ResetsAt     time.Time `json:"resetsAt"`
		} `json:"budget"`
	} `json:"error"`
}
