package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
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
	"github.com/toolgate/toolgate/toolgatetype"
)

// The caller's identity reaches the tool (contract section 30): an
// upstream MCP server over HTTP and a manifest tool, each behind a token
// exchange at a real OpenID provider (zitadel's op), are sent tokens
// whose subject is the caller and whose audience is theirs.

const (
	exchangeAudience = "https://toolgate.example/mcp"
	manifestAudience = "https://whoami-http.example"
	mcpAudience      = "https://people-mcp.example"
	exchangeSecret   = "gateway-exchange-secret-5b1f"
	keyCaller        = "tg_kim_exchange_key_0123456789"
)

// seenToken is what an upstream of the test saw: the verified token's
// subject and audience, and the token itself, for the distinctive-value
// checks.
type seenToken struct {
	Sub, Raw string
	Aud      []string
}

// exchangeRig is a server whose two tools need the caller's identity, the
// provider that issues and exchanges tokens, and what the upstreams saw.
type exchangeRig struct {
	t        *testing.T
	idp      *testidp.Provider
	srv      *Server
	api      string // the gateway's HTTP base URL
	db       string // its SQLite file
	metrics  string // its metrics URL
	logs     *syncBuffer
	traces   *syncBuffer // what the OTLP collector got
	mu       sync.Mutex
	seen     []seenToken
	mcpCalls int
}

// verify checks a bearer token the way an upstream does: signed by the
// provider, for audience.
func (r *exchangeRig) verify(ctx context.Context, header, audience string) (seenToken, error) {
	raw, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return seenToken{}, io.EOF
	}
	keys := gooidc.NewRemoteKeySet(ctx, r.idp.KeysURL())
	v := gooidc.NewVerifier(r.idp.Issuer, keys, &gooidc.Config{ClientID: audience})
	tok, err := v.Verify(ctx, raw)
	if err != nil {
		return seenToken{}, err
	}
	s := seenToken{Sub: tok.Subject, Aud: tok.Audience, Raw: raw}
	r.mu.Lock()
	r.seen = append(r.seen, s)
	r.mu.Unlock()
	return s, nil
}

func (r *exchangeRig) logText() string {
	r.logs.mu.Lock()
	defer r.logs.mu.Unlock()
	return r.logs.buf.String()
}

func (r *exchangeRig) traceText() string {
	r.traces.mu.Lock()
	defer r.traces.mu.Unlock()
	return r.traces.buf.String()
}

func (r *exchangeRig) tokensSeen() []seenToken {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seenToken(nil), r.seen...)
}

// manifestProvider is the manifest tool's provider: it answers who called,
// as its verified token says, and 401 without one.
func (r *exchangeRig) manifestProvider() *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		s, err := r.verify(req.Context(), req.Header.Get("Authorization"), manifestAudience)
		if err != nil {
			http.Error(w, `{"reason": "no valid token"}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"sub": s.Sub, "aud": s.Aud[0]})
	}))
	r.t.Cleanup(srv.Close)
	return srv
}

// mcpUpstream is an MCP server over HTTP whose whoami tool answers who
// called, as the call's verified token says. Its handshake and listing
// carry no token: they are the gateway's own.
func (r *exchangeRig) mcpUpstream() *httptest.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "people", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "whoami", Description: "Says who called.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r.mu.Lock()
			r.mcpCalls++
			r.mu.Unlock()
			seen, err := r.verify(ctx, req.Extra.Header.Get("Authorization"), mcpAudience)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no valid token"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sub=" + seen.Sub + " aud=" + seen.Aud[0]}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	r.t.Cleanup(srv.Close)
	return srv
}

const whoamiManifest = `{
  "schemaVersion": "toolgate.tool/v1",
  "slug": "whoami-http",
  "name": "Who am I",
  "description": "Says who called, as the provider's token says",
  "category": "Identity",
  "version": 1,
  "provider": {"name": "Whoami", "trustTier": "unverified"},
  "endpoint": {"origin": "https://whoami.example", "method": "GET", "path": "/whoami"},
  "auth": {"tokenExchange": {"tokenUrl": "TOKEN_URL", "audience": "` + manifestAudience + `", "scope": "whoami:read",
    "clientId": "gateway", "clientSecret": {"env": "TOOLGATE_TEST_EXCHANGE_SECRET"}}},
  "pricing": {"type": "per_call", "amount": "0.0100"},
  "inputSchema": {"type": "object", "additionalProperties": false, "properties": {}},
  "outputSchema": {"type": "object", "required": ["sub", "aud"], "additionalProperties": false,
    "properties": {"sub": {"type": "string"}, "aud": {"type": "string"}}}
}`

// startExchangeRig starts it all. mcpCredential gives the MCP server a
// credential for key callers.
func startExchangeRig(t *testing.T, mcpCredential bool) *exchangeRig {
	t.Setenv("TOOLGATE_TEST_EXCHANGE_SECRET", exchangeSecret)
	r := &exchangeRig{t: t, logs: &syncBuffer{}, traces: &syncBuffer{}}
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		_, _ = r.traces.Write(b)
	}))
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", collector.URL+"/v1/traces")
	r.idp = testidp.Start(t, exchangeAudience)
	call := []string{oauth.DefaultCallScope}
	r.idp.AddClient(testidp.Client{ID: "ann", Secret: "secret-ann", Scopes: call})
	r.idp.AddClient(testidp.Client{ID: "ben", Secret: "secret-ben", Scopes: call})
	r.idp.AddClient(testidp.Client{ID: "gateway", Secret: exchangeSecret})
	provider := r.manifestProvider()
	upstream := r.mcpUpstream()

	dir := t.TempDir()
	writeManifest(t, dir, "tools/whoami.json", json.RawMessage(strings.Replace(whoamiManifest, "TOKEN_URL", r.idp.TokenURL, 1)))
	r.db = filepath.Join(dir, "toolgate.db")
	people := map[string]any{"id": "people", "url": upstream.URL,
		"auth": map[string]any{"tokenExchange": map[string]any{"tokenUrl": r.idp.TokenURL, "audience": mcpAudience,
			"clientId": "gateway", "clientSecret": map[string]any{"env": "TOOLGATE_TEST_EXCHANGE_SECRET"}}}}
	if mcpCredential {
		t.Setenv("TOOLGATE_TEST_PEOPLE_KEY", "people-service-key-for-key-callers")
		people["credential"] = map[string]any{"header": "Authorization", "scheme": "Bearer", "env": "TOOLGATE_TEST_PEOPLE_KEY"}
	}
	metricsLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	path := writeManifest(t, dir, "toolgate.json", map[string]any{
		"builtinTools":  false,
		"storage":       "sqlite:" + r.db,
		"feeRate":       "0",
		"metricsListen": metricsLn.Addr().String(),
		"tools":         []string{"tools/*.json"},
		"upstreams":     map[string]string{"whoami-http": provider.URL},
		"trust":         map[string]any{"whoami-http": map[string]any{"paymentVerified": true, "endpointVerified": true}},
		"oauth":         map[string]any{"issuer": r.idp.Issuer, "audience": exchangeAudience},
		"principals": []any{map[string]any{"id": "*", "spendControls": map[string]any{"dailyLimitUsd": "10"}},
			map[string]any{"id": "kim", "apiKeys": []string{keyCaller}}},
		"mcpServers": []any{people},
	})
	cfg, err := LoadConfig(path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r.srv, err = New(ctx, cfg, &Options{Logger: slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.srv.Close() })
	go func() { _ = r.srv.ServeMetrics(ctx, metricsLn) }()
	r.metrics = "http://" + metricsLn.Addr().String() + "/metrics"
	api := httptest.NewServer(r.srv.Handler())
	t.Cleanup(api.Close)
	r.api = api.URL
	require.Eventually(t, func() bool {
		_, err := r.srv.Gateway().Registry().Lookup("people.whoami")
		return err == nil
	}, 30*1e9, 50*1e6, "the MCP server's tool is served")
	return r
}

// exchangeResponse is an answer of the gateway's.
type exchangeResponse struct {
	status int
	body   string
}

func (r *exchangeRig) send(method, path, credential string, body any, header ...string) exchangeResponse {
	r.t.Helper()
	var in io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(r.t, err)
		in = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, r.api+path, in)
	require.NoError(r.t, err)
	req.Header.Set("Authorization", "Bearer "+credential)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return exchangeResponse{resp.StatusCode, string(b)}
}

// call quotes slug and calls it under key with the quote's digest approved,
// returning the quote's answer when it refused, else the call's.
func (r *exchangeRig) call(credential, slug, key string) exchangeResponse {
	r.t.Helper()
	q := r.send(http.MethodPost, "/v1/tools/"+slug+"/quote", credential, nil)
	if q.status != http.StatusCreated {
		return q
	}
	var quote struct {
		Quote struct {
			ID             string `json:"id"`
			ManifestDigest string `json:"manifestDigest"`
		} `json:"quote"`
	}
	require.NoError(r.t, json.Unmarshal([]byte(q.body), &quote))
	return r.send(http.MethodPost, "/v1/tools/"+slug+"/call", credential, map[string]any{
		"quoteId": quote.Quote.ID, "input": map[string]any{},
		"approval": map[string]any{"manifestDigest": quote.Quote.ManifestDigest},
	}, "Idempotency-Key", key)
}

func errorCode(t *testing.T, body string) (code, message string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	return e.Error.Code, e.Error.Message
}

func TestTokenExchangeSendsEachUpstreamTheCallersIdentity(t *testing.T) {
	r := startExchangeRig(t, false)
	ann, ben := r.idp.Token(t, "ann"), r.idp.Token(t, "ben")

	res := r.call(ann, "whoami-http", "ann-1")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Contains(t, res.body, `"status":"completed"`)
	assert.Contains(t, res.body, `"output":{"aud":"`+manifestAudience+`","sub":"ann"}`)

	res = r.call(ann, "people.whoami", "ann-2")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Contains(t, res.body, "sub=ann aud="+mcpAudience)
	assert.EqualValues(t, 2, r.idp.Exchanges(), "one exchange per upstream")

	// A second call within the token's life is sent the kept token.
	res = r.call(ann, "whoami-http", "ann-3")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.EqualValues(t, 2, r.idp.Exchanges(), "the token was kept")

	// Another caller, another token: over MCP this time.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "exchange-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: r.api + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{ben}}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	digest := ""
	for _, tl := range tools.Tools {
		if tl.Name == "people.whoami" {
			digest, _ = tl.Meta["toolgate/manifestDigest"].(string)
		}
	}
	require.NotEmpty(t, digest)
	out, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "people.whoami", Arguments: map[string]any{},
		Meta: mcp.Meta{"toolgate/approval": digest}})
	require.NoError(t, err)
	require.False(t, out.IsError, "%v", out.Content)
	assert.Contains(t, out.Content[0].(*mcp.TextContent).Text, "sub=ben aud="+mcpAudience)
	assert.EqualValues(t, 3, r.idp.Exchanges())

	seen := r.tokensSeen()
	require.Len(t, seen, 4)
	for i, want := range []struct{ sub, aud string }{{"ann", manifestAudience}, {"ann", mcpAudience}, {"ann", manifestAudience}, {"ben", mcpAudience}} {
		assert.Equal(t, want.sub, seen[i].Sub)
		assert.Equal(t, []string{want.aud}, seen[i].Aud)
	}
	assert.Equal(t, seen[0].Raw, seen[2].Raw, "the kept token")
	assert.NotEqual(t, seen[1].Raw, seen[3].Raw, "two callers, two tokens")

	// No token, the callers' or the exchanged ones, anywhere the gateway
	// writes: its answers were checked above for theirs, its logs, its
	// metrics and its database.
	secrets := map[string]string{"ann's token": ann, "ben's token": ben, "the exchange secret": exchangeSecret}
	for i, s := range seen {
		secrets["exchanged token "+string(rune('0'+i))] = s.Raw
	}
	resp, err := http.Get(r.metrics)
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(metrics), "toolgate_")
	executions := r.send(http.MethodGet, "/v1/executions", ann, nil)
	require.Equal(t, http.StatusOK, executions.status)
	require.NoError(t, r.srv.Close())
	db, err := os.ReadFile(r.db)
	require.NoError(t, err)
	wal, _ := os.ReadFile(r.db + "-wal")
	require.Contains(t, string(db)+string(wal), "whoami-http", "the database holds the calls")
	for what, s := range secrets {
		for where, text := range map[string]string{"the logs": r.logText(), "the metrics": string(metrics), "the traces": r.traceText(),
			"the database": string(db) + string(wal), "the executions": executions.body, "an answer": res.body} {
			assert.NotContains(t, text, s, "%s in %s", what, where)
		}
	}
	assert.Contains(t, r.logText(), "whoami-http", "the logs were captured")
	assert.Contains(t, r.traceText(), "whoami-http", "the traces were exported")
}

// bearerTransport sends token with every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

func TestTokenExchangeRefusesKeyCallersUnlessTheyHaveACredential(t *testing.T) {
	r := startExchangeRig(t, true)

	// The manifest tool has no credential for key callers: refused at
	// the quote, which can tell, naming the tool.
	res := r.call(keyCaller, "whoami-http", "kim-1")
	require.Equal(t, http.StatusForbidden, res.status, res.body)
	code, msg := errorCode(t, res.body)
	assert.Equal(t, string(toolgatetype.CodeUpstreamIdentityRequired), code)
	assert.Contains(t, msg, "whoami-http")

	// The MCP server has one: kim is sent it, and nothing is exchanged.
	res = r.call(keyCaller, "people.whoami", "kim-2")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.EqualValues(t, 0, r.idp.Exchanges())
	r.mu.Lock()
	assert.Equal(t, 1, r.mcpCalls)
	r.mu.Unlock()

	// At the call too, under a quote made before (a quote is the caller's,
	// and a key caller's cannot be made for the tool): over MCP.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "exchange-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: r.api + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{keyCaller}}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	out, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami-http", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, out.IsError)
	text := out.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, text, string(toolgatetype.CodeUpstreamIdentityRequired))
	assert.Contains(t, text, "whoami-http")
}

func TestTokenExchangeRefusedChargesNothing(t *testing.T) {
	r := startExchangeRig(t, false)
	ann := r.idp.Token(t, "ann")
	r.idp.RefuseExchanges(true)

	res := r.call(ann, "whoami-http", "ann-refused")
	require.Equal(t, http.StatusBadGateway, res.status, res.body)
	code, msg := errorCode(t, res.body)
	assert.Equal(t, string(toolgatetype.CodeUpstreamAuthFailed), code)
	assert.Contains(t, msg, "whoami-http")
	assert.NotContains(t, res.body, ann)
	res = r.call(ann, "people.whoami", "ann-refused-mcp")
	require.Equal(t, http.StatusBadGateway, res.status, res.body)
	_, msg = errorCode(t, res.body)
	assert.Contains(t, msg, "people")
	assert.Empty(t, r.tokensSeen(), "no upstream was reached")

	spend := r.send(http.MethodGet, "/v1/spend", ann, nil)
	require.Equal(t, http.StatusOK, spend.status, spend.body)
	assert.Contains(t, spend.body, `"totalUsd":"0.0000"`, spend.body)
	executions := r.send(http.MethodGet, "/v1/executions", ann, nil)
	require.Equal(t, http.StatusOK, executions.status)
	assert.NotContains(t, executions.body, "whoami", "nothing was run: %s", executions.body)

	// The key is free: once the provider exchanges again, the same
	// request under the same key runs, and is charged once.
	r.idp.RefuseExchanges(false)
	res = r.call(ann, "whoami-http", "ann-refused")
	require.Equal(t, http.StatusOK, res.status, res.body)
	assert.Contains(t, res.body, `"sub":"ann"`)
	spend = r.send(http.MethodGet, "/v1/spend", ann, nil)
	assert.Contains(t, spend.body, `"totalUsd":"0.0100"`, spend.body)

}
