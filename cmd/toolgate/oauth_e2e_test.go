package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
)

// oauthServer is the server binary accepting the tokens of a real
// identity provider, on a SQLite file, with metrics and traces on.
type oauthServer struct {
	idp        *testidp.Provider
	srv        *process
	base       string
	db         string
	metricsURL string
	collector  *otlpReceiver
	aliceKey   string
}

// startOAuthServer starts an identity provider whose tokens are for the
// server's /mcp, and the server. Every token subject calls under the "*"
// template, three calls a minute each; alice calls with a key; pat
// approves for alice with tokens alone.
func startOAuthServer(t *testing.T) *oauthServer {
	t.Helper()
	// The audience is the server's own URL, so the address is chosen
	// before the server starts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	s := &oauthServer{base: "http://" + addr, db: filepath.Join(t.TempDir(), "toolgate.db"), collector: &otlpReceiver{},
		aliceKey: randomKey(t, "tg_test_oauth_alice_")}
	s.idp = testidp.Start(t, s.base+"/mcp")
	for _, id := range []string{"agent-1", "agent-2", "ts-agent"} {
		s.idp.AddClient(testidp.Client{ID: id, Secret: "secret-" + id, Scopes: []string{oauth.DefaultCallScope}})
	}
	s.idp.AddClient(testidp.Client{ID: "pat-laptop", Secret: "secret-pat", Subject: "pat-uuid",
		Scopes: []string{oauth.DefaultApproveScope}, Claims: map[string]any{"toolgate_approver": "pat"}})
	otlp := httptest.NewServer(s.collector)
	t.Cleanup(otlp.Close)
	path := writeConfig(t, map[string]any{
		"listen":        addr,
		"storage":       "sqlite:" + s.db,
		"metricsListen": "127.0.0.1:0",
		// Many refused tokens come from one address here; limiting them is
		// the guessing tests' to show.
		"limits": map[string]any{"failedAuth": map[string]any{"max": 1000}},
		"oauth": map[string]any{"issuer": s.idp.Issuer, "audience": s.base + "/mcp", "approverClaim": "toolgate_approver",
			"scopes": map[string]any{"call": oauth.DefaultCallScope, "approve": oauth.DefaultApproveScope}},
		"principals": []any{
			map[string]any{"id": "*", "spendControls": map[string]any{"rateLimitPerMinute": 3}},
			map[string]any{"id": "alice", "apiKeys": []string{s.aliceKey}},
		},
		"approvers": []any{map[string]any{"id": "pat", "principals": []string{"alice"}}},
	})
	var base string
	s.srv, base = startServer(t, []string{"-config", path, "-offline"},
		"OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.URL, "OTEL_BSP_SCHEDULE_DELAY=50")
	require.Equal(t, s.base, base)
	s.metricsURL = strings.TrimPrefix(s.srv.waitLine("toolgate metrics on ", 10*time.Second), "toolgate metrics on ")
	return s
}

var quakeWeek = map[string]any{"starttime": "2024-09-25", "endtime": "2024-09-30"}

// TestServerAcceptsIdentityProviderTokens calls over the HTTP API and /mcp
// with tokens a real OpenID provider issued, each subject under the
// template's limits on its own, refuses bad tokens with the challenge
// that leads to the provider, and never writes a token anywhere: not in
// its logs, its metrics, its traces or its store.
func TestServerAcceptsIdentityProviderTokens(t *testing.T) {
	t.Parallel()
	s := startOAuthServer(t)
	var tokens []string // every token sent, to look for afterwards
	token := func(client string) string {
		tok := s.idp.Token(t, client)
		tokens = append(tokens, tok)
		return tok
	}

	// Where a client learns how to sign in.
	for _, path := range []string{oauth.MetadataPath + "/mcp", oauth.MetadataPath} {
		r := client{t: t, base: s.base}.do(http.MethodGet, path, nil)
		require.Equal(t, http.StatusOK, r.status, path)
		doc := r.json(t)
		assert.Equal(t, s.base+"/mcp", doc["resource"], path)
		assert.Equal(t, []any{s.idp.Issuer}, doc["authorization_servers"], path)
		assert.Equal(t, []any{"toolgate:call", "toolgate:approve"}, doc["scopes_supported"], path)
	}

	// Over the HTTP API, agent-1 calls until the template's three calls a
	// minute are spent.
	agent1 := client{t: t, base: s.base, key: token("agent-1")}
	for i := range 3 {
		quoteID, digest, _ := agent1.quote("earthquake-search")
		r := agent1.call("earthquake-search", quoteID, digest, "agent-1-"+string(rune('a'+i)), quakeWeek)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.Equal(t, "completed", r.json(t)["status"])
	}
	r := agent1.do(http.MethodPost, "/v1/tools/earthquake-search/quote", nil)
	if r.status == http.StatusCreated {
		q := r.json(t)["quote"].(map[string]any)
		r = agent1.call("earthquake-search", q["id"].(string), q["manifestDigest"].(string), "agent-1-d", quakeWeek)
	}
	assert.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	listed := agent1.do(http.MethodGet, "/v1/executions", nil)
	require.Equal(t, http.StatusOK, listed.status)
	assert.Len(t, listed.json(t)["executions"], 3, "agent-1's own calls, under its subject")

	// Over /mcp, agent-2 calls: its window is its own.
	transport := &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: &http.Client{Transport: withKey{token("agent-2")}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "oauth-e2e", Version: "1"}, nil).Connect(context.Background(), transport, nil)
	require.NoError(t, err)
	digest, _ := mcpTools(t, cs)["earthquake-search"].Meta["toolgate/manifestDigest"].(string)
	out := completed(t, mcpCall(t, cs, "earthquake-search", quakeWeek, mcp.Meta{"toolgate/approval": digest}))
	assert.Len(t, out["features"], 10)
	require.NoError(t, cs.Close())

	// Keys work beside tokens; pat's token approves for alice.
	alice := client{t: t, base: s.base, key: s.aliceKey}
	quoteID, digest, _ := alice.quote("earthquake-search")
	require.Equal(t, http.StatusOK, alice.call("earthquake-search", quoteID, digest, "alice-1", quakeWeek).status)
	pat := client{t: t, base: s.base, key: token("pat-laptop")}
	r = pat.do(http.MethodGet, "/v1/executions?principal=alice", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Len(t, r.json(t)["executions"], 1)
	assert.Equal(t, http.StatusForbidden, pat.do(http.MethodPost, "/v1/tools/earthquake-search/quote", nil).status)

	// Bad tokens are refused on both doors with the challenge.
	challenge := `resource_metadata="` + s.base + `/.well-known/oauth-protected-resource/mcp"`
	for _, bad := range s.idp.BadTokens(t, "agent-1") {
		tokens = append(tokens, bad.Token)
		r := client{t: t, base: s.base, key: bad.Token}.do(http.MethodPost, "/v1/tools/earthquake-search/quote", nil)
		assert.Equal(t, http.StatusUnauthorized, r.status, bad.Name)
		assert.Contains(t, r.header.Get("WWW-Authenticate"), `Bearer error="invalid_token"`, bad.Name)
		assert.Contains(t, r.header.Get("WWW-Authenticate"), challenge, bad.Name)
		r = client{t: t, base: s.base, key: bad.Token}.do(http.MethodPost, "/mcp",
			json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`),
			"Accept", "application/json, text/event-stream")
		assert.Equal(t, http.StatusUnauthorized, r.status, bad.Name)
		assert.Contains(t, r.header.Get("WWW-Authenticate"), challenge, bad.Name)
	}
	r = client{t: t, base: s.base}.do(http.MethodPost, "/mcp", json.RawMessage(`{}`))
	assert.Equal(t, "Bearer "+challenge, r.header.Get("WWW-Authenticate"), "no credential: where to get one")

	// Nowhere a token: the metrics, and once the server has stopped, its
	// logs, the spans it exported and every file of its store.
	resp, err := http.Get(s.metricsURL)
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 0, s.srv.stop(exitTimeout))
	stored := readFiles(t, s.db+"*")
	require.Contains(t, stored, "agent-1", "the store holds the token subjects' calls")
	spans := s.collector.received()
	require.Contains(t, spans, "execute_tool")
	outputs := map[string]string{
		"logs":    s.srv.stdout.String() + s.srv.stderr.String(),
		"metrics": string(metrics),
		"traces":  spans,
		"store":   stored,
	}
	for _, tok := range tokens {
		signature := tok[strings.LastIndexByte(tok, '.')+1:]
		payload := strings.Split(tok, ".")[1]
		for name, text := range outputs {
			assert.NotContains(t, text, tok, name)
			assert.NotContains(t, text, payload, name)
			if len(signature) > 16 {
				assert.NotContains(t, text, signature, name)
			}
		}
	}
}

// readFiles is the content of the files matching glob, together.
func readFiles(t *testing.T, glob string) string {
	t.Helper()
	paths, err := filepath.Glob(glob)
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		b.Write(data)
	}
	return b.String()
}

// TestTypeScriptClientDiscoversTheIdentityProvider runs the TypeScript
// MCP SDK's client, given only the server's /mcp URL and an OAuth client's
// credentials (its client credentials provider): refused with 401, it
// reads the resource metadata the challenge names, finds the identity
// provider there, gets a token from it, and calls a tool.
func TestTypeScriptClientDiscoversTheIdentityProvider(t *testing.T) {
	t.Parallel()
	dir := npmInstall(t, "testdata/oauth-ts")
	s := startOAuthServer(t)

	cmd := exec.Command("node", "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCP_URL="+s.base+"/mcp", "CLIENT_ID=ts-agent", "CLIENT_SECRET=secret-ts-agent",
		"SCOPE="+oauth.DefaultCallScope, "TOOL=earthquake-search", `INPUT={"starttime":"2024-09-25","endtime":"2024-09-30"}`)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "node: %s\n%s", stdout.String(), stderr.String())
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the TypeScript client did not finish: %s\n%s", stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var got struct {
		Seen []struct {
			Method, URL, Challenge string
			Status                 int
		}
		Tools  []string
		Result mcp.CallToolResult
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got), "%s\n%s", stdout.String(), stderr.String())

	metadataURL := s.base + oauth.MetadataPath + "/mcp"
	require.NotEmpty(t, got.Seen)
	first := got.Seen[0]
	assert.Equal(t, s.base+"/mcp", first.URL)
	assert.Equal(t, http.StatusUnauthorized, first.Status)
	assert.Equal(t, `Bearer resource_metadata="`+metadataURL+`"`, first.Challenge)
	var steps []string
	for _, r := range got.Seen {
		switch {
		case r.URL == metadataURL && r.Status == http.StatusOK:
			steps = append(steps, "resource metadata")
		case strings.HasPrefix(r.URL, s.idp.Issuer+"/.well-known/") && r.Status == http.StatusOK:
			steps = append(steps, "provider metadata")
		case r.URL == s.idp.TokenURL && r.Method == http.MethodPost && r.Status == http.StatusOK:
			steps = append(steps, "token")
		case r.URL == s.base+"/mcp" && r.Status == http.StatusOK && (len(steps) == 0 || steps[len(steps)-1] != "mcp"):
			steps = append(steps, "mcp")
		}
	}
	assert.Equal(t, []string{"resource metadata", "provider metadata", "token", "mcp"}, steps, "%+v", got.Seen)
	assert.Contains(t, got.Tools, "earthquake-search")
	require.False(t, got.Result.IsError, "%+v", got.Result.Content)
	assert.Len(t, got.Result.StructuredContent.(map[string]any)["features"], 10)
}

// npmInstall installs the packages of the package.json and
// package-lock.json in dir (relative to the test) into a cache directory
// kept between runs, keyed by the lock file, and returns that directory
// with dir's other files copied in. Without node and npm the test is
// skipped, except in CI, where it fails.
func npmInstall(t *testing.T, dir string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("installs npm packages and runs node")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI: %v", tool, err)
			}
			t.Skipf("%s is not installed: install Node.js 20 or later to run the TypeScript client", tool)
		}
	}
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	require.NoError(t, err)
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	target := filepath.Join(cache, "toolgate-tests", filepath.Base(dir)+"-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(target, "node_modules", ".installed")); err != nil {
		installPackages(t, dir, target)
	}
	// The scripts are copied in on every run, so a changed one is the one
	// that runs.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(target, e.Name()), data, 0o644))
	}
	return target
}

// installPackages runs npm ci for dir's package files in a directory of
// its own and then moves it to target whole: tests running at once, in
// this process or another, never see, or run npm in, a half-installed
// target. The first to finish wins; the others' installs are dropped.
func installPackages(t *testing.T, dir, target string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
	tmp, err := os.MkdirTemp(filepath.Dir(target), filepath.Base(target)+".installing-")
	require.NoError(t, err)
	defer os.RemoveAll(tmp) // left only when the move failed
	for _, name := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(tmp, name), data, 0o644))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm ci: %s", out)
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "node_modules", ".installed"), nil, 0o644))
	if _, err := os.Stat(filepath.Join(target, "node_modules", ".installed")); err == nil {
		return // installed meanwhile
	}
	// A target without the mark is a broken install of an older run.
	require.NoError(t, os.RemoveAll(target))
	if err := os.Rename(tmp, target); err != nil {
		_, statErr := os.Stat(filepath.Join(target, "node_modules", ".installed"))
		require.NoError(t, statErr, "moving the install in: %v", err)
	}
}
