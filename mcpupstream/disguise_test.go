package mcpupstream_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/secrettest"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/toolgatehttp"
)

// disguiseSecret is the credential the echoing server is given.
const disguiseSecret = "tg-mcp-cred-91c4e2aa-NEVER-SHOWN"

// echoingServer is an MCP server over streamable HTTP that answers each
// tool's call with the text its "case" argument names, as a careless or
// hostile server echoing the credential it was sent might: as structured
// content (echo), as a text block (content), as a failure (fail), or as a
// JSON-RPC error (refuse).
func echoingServer(t *testing.T, answers map[string]string) *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "echoing", Version: "1"}, nil)
	in := json.RawMessage(`{"type":"object","properties":{"case":{"type":"string"}},"required":["case"]}`)
	answer := func(req *mcp.CallToolRequest) string {
		var args struct{ Case string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return answers[args.Case]
	}
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: in,
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: map[string]any{"text": answer(req)}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "content", InputSchema: in},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer(req)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: in},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: answer(req)}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "refuse", InputSchema: in},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32001, Message: answer(req)}
		})
	srv.AddTool(&mcp.Tool{Name: "described", Title: "Described " + answers["zwsp"],
		Description: "Calls with the token " + answers["many"] + ".", InputSchema: in},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "leak-" + disguiseSecret, InputSchema: in},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return hs
}

// TestAnUpstreamEchoingItsCredentialCutOrDisguisedShowsNone: an upstream
// MCP server echoes its credential with invisible characters inside, or at
// the end of a failure's text long enough that shortening would cut it, or
// cut short itself, or in what it says of its tools. Over the HTTP API, no
// call's response and no registry page shows the credential or its
// disguised form, and no failure's message any 8 characters of it.
func TestAnUpstreamEchoingItsCredentialCutOrDisguisedShowsNone(t *testing.T) {
	t.Parallel()
	s := disguiseSecret
	pad := strings.Repeat("x", 185)
	answers := map[string]string{
		"zwsp":       "echo " + s[:3] + "\u200b" + s[3:],
		"many":       "echo " + s[:3] + "\u2060\ufeff\u00ad" + s[3:10] + "\u202e" + s[10:] + "\u202c",
		"long":       pad + s,
		"long-zwsp":  pad + s[:4] + "\u200b" + s[4:],
		"long-cut":   pad + s[:15],
		"cut":        "invalid token " + s[:12] + "...",
		"plain-echo": "echo " + s,
	}
	up := echoingServer(t, answers)
	g := gateway(t, nil)
	start(t, g.Registry, &mcpupstream.Options{LookupEnv: func(k string) (string, bool) {
		return s, k == "ECHOING_TOKEN"
	}}, mcpupstream.Server{
		ID: "echoing", URL: up.URL,
		Credential: &mcpupstream.Credential{Header: "Authorization", Scheme: "Bearer", Value: mcpupstream.Value{Env: "ECHOING_TOKEN"}},
		Defaults:   mcpupstream.ToolConfig{Capabilities: declared()},
	})
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", "tg_test_alice_key"))
	api := httptest.NewServer(toolgatehttp.NewHandler(g.Gateway, &toolgatehttp.Options{Authenticator: keys}))
	defer api.Close()
	post := func(path, body string, headers ...string) map[string]any {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, api.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tg_test_alice_key")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assertNoCredentialRun(t, string(b), path)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
		return m
	}

	// What the server says of its tools, which every caller may read.
	for _, path := range []string{"/v1/registry/tools", "/v1/registry/tools/echoing.described",
		"/v1/registry/tools/echoing.described/docs", "/v1/registry/llms.txt"} {
		resp, err := http.Get(api.URL + path)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
		if path != "/v1/registry/llms.txt" { // which lists names only
			assert.Contains(t, string(b), "[redacted]", path)
		}
		assertNoCredentialRun(t, string(b), path)
		assert.NotContains(t, strings.ToLower(string(b)), "leak-", "%s: a tool whose name holds the credential is not served", path)
	}

	n := 0
	for _, tool := range []string{"echo", "content", "fail", "refuse"} {
		for c := range answers {
			if strings.HasSuffix(c, "cut") && (tool == "echo" || tool == "content") {
				// A piece of the credential in an output is the
				// provider's data, not cut by the gateway: only a whole
				// one is taken out (see internal/redact).
				continue
			}
			n++
			slug := "echoing." + tool
			q := post("/v1/tools/"+slug+"/quote", "{}")["quote"].(map[string]any)
			body, _ := json.Marshal(map[string]any{"quoteId": q["id"], "input": map[string]any{"case": c},
				"approval": map[string]any{"manifestDigest": q["manifestDigest"]}})
			exec := post("/v1/tools/"+slug+"/call", string(body), "Idempotency-Key", slug+"-"+c)
			shown, _ := json.Marshal(exec)
			want := "completed"
			if tool == "fail" || tool == "refuse" {
				want = "failed"
			}
			assert.Equal(t, want, exec["status"], "%s %s: %s", tool, c, shown)
			assert.Contains(t, string(shown), "[redacted]", "%s %s", tool, c)
			if tool == "refuse" {
				assert.Contains(t, string(shown), "refused the call", "a JSON-RPC error: %s", shown)
			}
		}
	}
	require.Equal(t, 4*len(answers)-4, n)
}

// assertNoCredentialRun fails when text shows disguiseSecret or any 8
// characters of it in a row, however it is read.
func assertNoCredentialRun(t *testing.T, text, what string) {
	t.Helper()
	secrettest.AssertNoRun(t, text, disguiseSecret, what)
}
