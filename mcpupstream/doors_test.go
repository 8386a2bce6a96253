package mcpupstream_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// TestEveryDoor serves an upstream's tools through every door of the
// gateway, in process: the registry and its documentation over HTTP, quote
// and call over the HTTP API and through the Go client, and toolgate's own
// MCP server.
func TestEveryDoor(t *testing.T) {
	t.Parallel()
	g := gateway(t, nil)
	srv := newUpstream()
	start(t, g.Registry, nil, mcpupstream.Server{ID: "up", Transport: inProcess(t, srv.MCP),
		Provider: mcpupstream.Provider{Name: "Upstream Co"},
		Defaults: mcpupstream.ToolConfig{Capabilities: declared(), Pricing: perCall("0.0100"), Trust: verified()}})
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", "tg_doors_alice"))
	api := httptest.NewServer(toolgatehttp.NewHandler(g.Gateway, &toolgatehttp.Options{Authenticator: keys}))
	defer api.Close()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(api.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
		return string(body)
	}

	// The registry and its documentation.
	var list toolgatetype.RegistryList
	require.NoError(t, json.Unmarshal([]byte(get("/v1/registry/tools?limit=100")), &list))
	require.Equal(t, len(upstreamtest.Tools()), list.Total)
	require.Contains(t, get("/v1/registry/tools/up.echo"), `"upstream":{"server":"up"`)
	require.Contains(t, get("/v1/registry/tools/up.echo/docs"), upstreamtest.EchoDescription)
	require.Contains(t, get("/v1/registry/tools/up.echo/openapi.json"), "/v1/tools/up.echo/call")
	require.Contains(t, get("/v1/registry/tools/up.echo/llms.txt"), "up.echo")
	require.Contains(t, get("/v1/registry/llms.txt"), "up.write-note")
	require.Contains(t, get("/tools/up.echo"), upstreamtest.EchoDescription)

	// Quote and call through the Go client, over the HTTP API.
	ctx := context.Background()
	c, err := client.New(api.URL, "tg_doors_alice", nil)
	require.NoError(t, err)
	q, err := c.Quote(ctx, "up.echo")
	require.NoError(t, err)
	require.Equal(t, "0.0110", q.Quote.TotalUSD)
	res, err := c.Call(ctx, toolgatetype.CallRequest{Tool: "up.echo", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"text":"through the client"}`),
		IdempotencyKey: "doors-1", ApprovalDigest: *q.Quote.ManifestDigest})
	out := toolgatetest.RequireCompleted(t, res, err, "0.0110")
	require.JSONEq(t, `{"text":"through the client"}`, string(out))
	entry, err := c.Entry(ctx, "up.write-note")
	require.NoError(t, err)
	require.Equal(t, "Write a note", entry.Name)
	require.Equal(t, "write_note", entry.Upstream.Name)

	// toolgate's own MCP server.
	gws, err := mcpserver.NewServer(g.Gateway, "alice", nil)
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := gws.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "remember": "once"}}, nil
		},
	}).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	names := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		names[tool.Name] = true
	}
	require.True(t, names["up.echo"] && names["up.write-note"], "%v", names)
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up.echo", Arguments: map[string]any{"text": "over MCP"}})
	require.NoError(t, err)
	require.False(t, r.IsError, "%v", r.Content)
	require.Equal(t, map[string]any{"text": "over MCP"}, r.StructuredContent)
	require.Equal(t, 2, srv.Runs(upstreamtest.Echo))
	g.RequireSpent(t, "alice", "0.0220")
}
