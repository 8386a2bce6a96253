package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
)

// TestTokenExchangeToAnMCPServer: the server binary, gating an MCP server
// over HTTP behind a token exchange at a real OpenID provider, sends each
// call the caller's identity (a token whose subject is the caller, whose
// audience is the MCP server's), keeps it for the next call, and refuses a
// caller with an API key, naming the server. Neither token is in its logs.
func TestTokenExchangeToAnMCPServer(t *testing.T) {
	t.Parallel()
	toolgateBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	base := "http://" + addr
	idp := testidp.Start(t, base+"/mcp")
	idp.AddClient(testidp.Client{ID: "ann", Secret: "secret-ann", Scopes: []string{oauth.DefaultCallScope}})
	idp.AddClient(testidp.Client{ID: "gateway", Secret: "gateway-secret-e2e"})

	const audience = "https://notes-mcp.example"
	var mu sync.Mutex
	var seen []string // the subjects of the verified tokens, then the tokens
	var raw []string
	notes := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	notes.AddTool(&mcp.Tool{Name: "whoami", Description: "Says who called.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok, ok := strings.CutPrefix(req.Extra.Header.Get("Authorization"), "Bearer ")
			v := gooidc.NewVerifier(idp.Issuer, gooidc.NewRemoteKeySet(ctx, idp.KeysURL()), &gooidc.Config{ClientID: audience})
			idt, err := v.Verify(ctx, tok)
			if !ok || err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no valid token"}}}, nil
			}
			mu.Lock()
			seen, raw = append(seen, idt.Subject), append(raw, tok)
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + idt.Subject}}}, nil
		})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return notes }, nil))
	defer upstream.Close()

	dir := t.TempDir()
	secretFile := filepath.Join(dir, "exchange-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte("gateway-secret-e2e\n"), 0o600))
	kimKey := randomKey(t, "tg_test_exchange_kim_")
	path := writeConfig(t, map[string]any{
		"listen":       addr,
		"storage":      "sqlite:" + filepath.Join(dir, "toolgate.db"),
		"builtinTools": false,
		"oauth":        map[string]any{"issuer": idp.Issuer, "audience": base + "/mcp"},
		"principals":   []any{map[string]any{"id": "*"}, map[string]any{"id": "kim", "apiKeys": []string{kimKey}}},
		"mcpServers": []any{map[string]any{"id": "notes", "url": upstream.URL,
			"auth": map[string]any{"tokenExchange": map[string]any{"tokenUrl": idp.TokenURL, "audience": audience,
				"clientId": "gateway", "clientSecret": map[string]any{"file": secretFile}}}}},
	})
	srv, got := startServer(t, []string{"-config", path})
	require.Equal(t, base, got)

	annToken := idp.Token(t, "ann")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "exchange-e2e", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: withKey{annToken}}}, nil)
	require.NoError(t, err)
	digest, _ := mcpTools(t, cs)["notes.whoami"].Meta["toolgate/manifestDigest"].(string)
	require.NotEmpty(t, digest)
	for range 2 {
		res := mcpCall(t, cs, "notes.whoami", map[string]any{}, mcp.Meta{"toolgate/approval": digest})
		require.False(t, res.IsError, "%v", res.Content)
		assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `"text":"you are ann"`)
	}
	require.NoError(t, cs.Close())
	assert.EqualValues(t, 1, idp.Exchanges(), "the second call was sent the kept token")

	kim := client{t: t, base: base, key: kimKey}
	r := kim.do(http.MethodPost, "/v1/tools/notes.whoami/quote", nil)
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	assert.Contains(t, string(r.body), `"code":"upstream_identity_required"`)
	assert.Contains(t, string(r.body), "notes")

	require.Equal(t, 0, srv.stop(exitTimeout))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"ann", "ann"}, seen)
	logs := srv.stderr.String() + srv.stdout.String()
	for _, tok := range append(raw, annToken, "gateway-secret-e2e") {
		assert.NotContains(t, logs, tok)
	}
}

// TestTokenExchangeConfigMistakes: a token exchange without its token URL,
// or on a server the gateway starts, stops the server at start, exit 2,
// naming the field.
func TestTokenExchangeConfigMistakes(t *testing.T) {
	t.Parallel()
	toolgateBinary(t)
	for _, c := range []struct{ server, want string }{
		{`{"id": "notes", "url": "https://notes.example/mcp", "auth": {"tokenExchange": {"audience": "https://notes.example", "clientId": "g", "clientSecret": "s"}}}`,
			"mcpServers[0].auth.tokenExchange.tokenUrl: is required"},
		{`{"id": "notes", "command": ["notes-server"], "auth": {"tokenExchange": {"tokenUrl": "https://idp.example/token", "audience": "https://notes.example", "clientId": "g", "clientSecret": "s"}}}`,
			"mcpServers[0].auth.tokenExchange: applies only to a url"},
	} {
		path := filepath.Join(t.TempDir(), "toolgate.json")
		require.NoError(t, os.WriteFile(path, []byte(`{"listen": "127.0.0.1:0", "mcpServers": [`+c.server+`]}`), 0o600))
		srv := startProcess(t, []string{"-config", path})
		assert.Equal(t, 2, srv.wait(exitTimeout))
		assert.Contains(t, srv.stderr.String(), c.want)
	}
}
