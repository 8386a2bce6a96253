//go:build unix

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/internal/upstreamtest"
)

func upstreamServerPath(t *testing.T) string {
	t.Helper()
	path, _ := upstreamServer.Build(t, "../../internal/upstreamtest/cmd/upstreamtest-server", false)
	return path
}

// notesServer is the config of upstreamtest's server, as "notes": it keeps
// its state in dir and starts a child process of its own; write_note is
// priced, declared to write, and trusted.
func notesServer(t *testing.T, dir string) map[string]any {
	return map[string]any{
		"id":      "notes",
		"command": []string{upstreamServerPath(t)},
		"env": map[string]any{
			"UPSTREAMTEST_STATE": dir,
			"UPSTREAMTEST_CHILD": "1",
			"NOTES_TOKEN":        map[string]any{"env": "TG_E2E_NOTES_TOKEN"},
		},
		"provider": map[string]any{"name": "Notes Inc", "trustTier": "basic"},
		"defaults": map[string]any{"capabilities": map[string]any{"readOnly": true, "openWorld": false,
			"seesUntrustedContent": false, "dataRetention": "none"}},
		"tools": map[string]any{"write_note": map[string]any{
			"pricing":      map[string]any{"type": "per_call", "amount": "0.0100"},
			"capabilities": map[string]any{"readOnly": false, "writesExternalData": true}}},
	}
}

// gone reports whether pid has ended: no such process, or a zombie.
func gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func readPID(t *testing.T, dir, file string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	return pid
}

// TestMCPServersBehindTheBinary runs the server binary with an MCP server
// of its config, and uses its tools through the HTTP API and /mcp: listed
// and documented, quoted, charged once, approved by a person in approver
// mode, with its process seeing only its configured environment. SIGTERM
// stops the server with no process left behind, and the credential the
// config passes the MCP server shows nowhere.
func TestMCPServersBehindTheBinary(t *testing.T) {
	t.Parallel()
	const secret = "tg-e2e-mcp-token-a41f09c7e2-DISTINCTIVE"
	aliceKey := randomKey(t, "tg_test_alice_")
	carolKey := randomKey(t, "tg_test_carol_")
	patKey := randomKey(t, "tg_test_pat_")
	state := t.TempDir()
	path := writeConfig(t, map[string]any{
		"listen":        "127.0.0.1:0",
		"metricsListen": "127.0.0.1:0",
		"principals": []any{
			map[string]any{"id": "alice", "apiKeys": []string{aliceKey}},
			map[string]any{"id": "carol", "apiKeys": []string{carolKey}, "approvalMode": "approver"},
		},
		"approvers":  []any{map[string]any{"id": "pat", "keys": []string{patKey}, "principals": []string{"carol"}}},
		"trust":      map[string]any{"notes.write-note": map[string]any{"paymentVerified": true, "endpointVerified": true}},
		"mcpServers": []any{notesServer(t, state)},
	})
	srv, base := startServer(t, []string{"-config", path}, "TG_E2E_NOTES_TOKEN="+secret, "TG_E2E_GATEWAY_ONLY=not-for-children")
	metricsURL := strings.TrimPrefix(srv.waitLine("toolgate metrics on ", 10*time.Second), "toolgate metrics on ")
	var bodies []string // every answer, searched for the secret at the end
	record := func(r response) response { bodies = append(bodies, string(r.body)); return r }
	anonymous := client{t: t, base: base}
	alice := client{t: t, base: base, key: aliceKey}
	carol := client{t: t, base: base, key: carolKey}
	pat := client{t: t, base: base, key: patKey}

	r := record(anonymous.do(http.MethodGet, "/healthz", nil))
	require.Equal(t, http.StatusOK, r.status)
	assert.JSONEq(t, `{"status":"ok","mcpServers":{"notes":"up"}}`, string(r.body))

	// Listed and documented.
	r = record(anonymous.do(http.MethodGet, "/v1/registry/tools?limit=100", nil))
	require.Equal(t, http.StatusOK, r.status)
	for _, slug := range []string{"notes.echo", "notes.write-note", "notes.env"} {
		assert.Contains(t, string(r.body), `"slug":"`+slug+`"`)
	}
	for _, p := range []string{"/v1/registry/tools/notes.write-note", "/v1/registry/tools/notes.write-note/docs",
		"/v1/registry/tools/notes.write-note/openapi.json", "/v1/registry/tools/notes.write-note/llms.txt",
		"/v1/registry/llms.txt", "/tools/notes.write-note"} {
		r = record(anonymous.do(http.MethodGet, p, nil))
		require.Equal(t, http.StatusOK, r.status, "%s: %s", p, r.body)
		assert.Contains(t, string(r.body), "notes.write-note", p)
	}

	// Quoted, called once, charged once, replayed.
	quoteID, digest, q := alice.quote("notes.write-note")
	assert.Equal(t, "0.0110", q["quote"].(map[string]any)["totalUsd"])
	first := record(alice.call("notes.write-note", quoteID, digest, "e2e-note-1", map[string]any{"note": "from the API"}))
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	exec := first.json(t)
	assert.Equal(t, "completed", exec["status"])
	assert.JSONEq(t, `{"content":[{"type":"text","text":"saved: from the API"}]}`, string(mustJSON(t, exec["output"])))
	again := record(alice.call("notes.write-note", quoteID, digest, "e2e-note-1", map[string]any{"note": "from the API"}))
	assert.Equal(t, string(first.body), string(again.body), "a replay")
	assert.Equal(t, 1, upstreamtest.RunsIn(state, upstreamtest.WriteNote))
	r = record(alice.do(http.MethodGet, "/v1/spend", nil))
	assert.Equal(t, "0.0110", r.json(t)["totalUsd"])

	// The process sees PATH, HOME and what the config names; the token it
	// echoes back is not in the answer.
	quoteID, digest, _ = alice.quote("notes.env")
	r = record(alice.call("notes.env", quoteID, digest, "e2e-env-1", map[string]any{}))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	env := r.json(t)["output"].(map[string]any)["env"].(map[string]any)
	names := []string{}
	for k := range env {
		names = append(names, k)
	}
	assert.ElementsMatch(t, []string{"PATH", "HOME", "UPSTREAMTEST_STATE", "UPSTREAMTEST_CHILD", "NOTES_TOKEN"}, names)
	assert.Equal(t, "[redacted]", env["NOTES_TOKEN"])
	r = record(alice.do(http.MethodGet, "/v1/executions/"+r.json(t)["id"].(string), nil))
	require.Equal(t, http.StatusOK, r.status)

	// In approver mode, the upstream is reached only once a person approved.
	quoteID, digest, _ = carol.quote("notes.write-note")
	r = record(carol.call("notes.write-note", quoteID, digest, "e2e-carol-1", map[string]any{"note": "needs pat"}))
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	assert.Equal(t, 1, upstreamtest.RunsIn(state, upstreamtest.WriteNote))
	r = record(carol.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": map[string]any{"note": "needs pat"}}))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	grant := r.json(t)["id"].(string)
	r = record(pat.do(http.MethodPost, "/v1/approval-requests/"+grant+"/approve", nil))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = record(carol.do(http.MethodPost, "/v1/tools/notes.write-note/call", map[string]any{
		"quoteId": quoteID, "input": map[string]any{"note": "needs pat"},
		"approval": map[string]any{"manifestDigest": digest, "grantId": grant}}, "Idempotency-Key", "e2e-carol-1"))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"])
	assert.Equal(t, 2, upstreamtest.RunsIn(state, upstreamtest.WriteNote))

	// toolgate's own MCP server serves them too.
	ctx := context.Background()
	person := &agent{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: person.elicit}).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: withKey{aliceKey}}}, nil)
	require.NoError(t, err)
	tools := mcpTools(t, cs)
	require.Contains(t, tools, "notes.echo")
	out := completed(t, mcpCall(t, cs, "notes.echo", map[string]any{"text": "over /mcp"}, nil))
	assert.Equal(t, "over /mcp", out["text"])
	require.Len(t, person.asked(), 1, "the person at the client approved it")
	require.NoError(t, cs.Close())

	// Metrics: the server is up, its tools are counted by slug.
	resp, err := http.Get(metricsURL)
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(metrics), `toolgate_mcp_server_up{server="notes"} 1`)
	assert.Contains(t, string(metrics), `toolgate_calls_total{outcome="completed",tool="notes.write-note"} 2`)
	bodies = append(bodies, string(metrics))

	// SIGTERM: the server stops, and so do the MCP server and its child.
	serverPID, childPID := readPID(t, state, "server.pid"), readPID(t, state, "child.pid")
	require.False(t, gone(serverPID) || gone(childPID))
	assert.Equal(t, 0, srv.stop(exitTimeout))
	deadline := time.Now().Add(10 * time.Second)
	for !(gone(serverPID) && gone(childPID)) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.True(t, gone(serverPID), "the MCP server's process is gone")
	assert.True(t, gone(childPID), "and the child it started")

	for i, b := range bodies {
		assert.NotContains(t, b, secret, "answer %d", i)
	}
	assert.NotContains(t, srv.stdout.String(), secret)
	assert.NotContains(t, srv.stderr.String(), secret)
	assert.NotContains(t, srv.stderr.String(), "not-for-children")
	srv.logLines() // every line JSON
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestMCPPinBlocksUntilAccepted pins the tools of an MCP server with
// "toolgate mcp pin", runs the gateway, has the server change a tool's
// description while it runs, and shows the tool blocked until "toolgate mcp
// pin" accepts the change, which prints what changed.
func TestMCPPinBlocksUntilAccepted(t *testing.T) {
	t.Parallel()
	aliceKey := randomKey(t, "tg_test_alice_")
	state := t.TempDir()
	server := notesServer(t, state)
	delete(server["env"].(map[string]any), "NOTES_TOKEN")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{aliceKey}}},
		"pins":       "toolgate.pins.json",
		"mcpServers": []any{server},
	})
	pin := func() string {
		t.Helper()
		p := startProcess(t, []string{"mcp", "pin", "-config", path})
		require.Equal(t, 0, p.wait(60*time.Second), "%s", p.stderr)
		return p.stdout.String()
	}
	printed := pin()
	assert.Contains(t, printed, "added    notes.echo sha256:")
	assert.Contains(t, printed, "13 tools pinned in "+filepath.Join(filepath.Dir(path), "toolgate.pins.json")+" (13 added, 0 changed, 0 removed)")

	srv, base := startServer(t, []string{"-config", path})
	alice := client{t: t, base: base, key: aliceKey}
	_, _, q := alice.quote("notes.echo")
	require.Equal(t, true, q["policy"].(map[string]any)["callable"], "pinned: callable")

	// The server changes echo's description while the gateway runs.
	quoteID, digest, _ := alice.quote("notes.set-description")
	r := alice.call("notes.set-description", quoteID, digest, "e2e-describe", map[string]any{"tool": "echo", "description": "Echoes, and reads your mail."})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var blocked map[string]any
	require.Eventually(t, func() bool {
		_, _, blocked = alice.quote("notes.echo")
		return blocked["policy"].(map[string]any)["callable"] == false
	}, 10*time.Second, 50*time.Millisecond, "the changed tool is blocked")
	assert.Contains(t, blocked["policy"].(map[string]any)["reasons"], "upstream tool definition changed since it was pinned")
	r = alice.do(http.MethodGet, "/v1/registry/tools/notes.echo", nil)
	entry := r.json(t)
	assert.NotEqual(t, entry["version"].(map[string]any)["manifestDigest"], entry["upstream"].(map[string]any)["pinnedDigest"], "both digests shown")

	printed = pin()
	assert.Regexp(t, `changed  notes\.echo sha256:[0-9a-f]{64}: description, upstream\.tool\.description\n`, printed)
	assert.Contains(t, printed, "(0 added, 1 changed, 0 removed)")
	require.Eventually(t, func() bool {
		_, _, q = alice.quote("notes.echo")
		return q["policy"].(map[string]any)["callable"] == true
	}, 10*time.Second, 50*time.Millisecond, "accepted: callable again")
	assert.Equal(t, 0, srv.stop(exitTimeout))

	// A digest edited by hand, with nothing else changed: pinning again
	// says so, rather than listing no field.
	pinsPath := filepath.Join(filepath.Dir(path), "toolgate.pins.json")
	raw, err := os.ReadFile(pinsPath)
	require.NoError(t, err)
	var file map[string]any
	require.NoError(t, json.Unmarshal(raw, &file))
	echo := file["tools"].(map[string]any)["notes.echo"].(map[string]any)
	served := echo["digest"].(string)
	edited := "sha256:" + strings.Repeat("0", 64)
	echo["digest"] = edited
	raw, err = json.Marshal(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(pinsPath, raw, 0o600))
	printed = pin()
	assert.Contains(t, printed, "changed  notes.echo "+served+": no field differs from the pinned manifest, but the pinned digest "+edited+" was not its digest; the pin is rewritten\n")
	assert.NotContains(t, printed, served+": \n", "never an empty list of fields")
	assert.Contains(t, printed, "(0 added, 1 changed, 0 removed)")
}

// TestMCPServersBehindToolgateMCP serves an MCP server's tools over
// "toolgate mcp" (stdio), and ends with no process left behind when the
// client goes.
func TestMCPServersBehindToolgateMCP(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	path := writeConfig(t, map[string]any{
		"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{randomKey(t, "tg_test_alice_")}}},
		"mcpServers": []any{notesServer(t, state)},
	})
	cmd := exec.Command(toolgateBinary(t), "mcp", "-config", path, "-principal", "alice")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TG_E2E_NOTES_TOKEN=x-token-for-stdio"}
	stderr := &testproc.SyncBuffer{}
	cmd.Stderr = stderr
	person := &agent{}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: person.elicit}).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "%s", stderr)
	require.Contains(t, mcpTools(t, cs), "notes.echo")
	out := completed(t, mcpCall(t, cs, "notes.echo", map[string]any{"text": "over stdio"}, nil))
	assert.Equal(t, "over stdio", out["text"])
	serverPID, childPID := readPID(t, state, "server.pid"), readPID(t, state, "child.pid")
	require.NoError(t, cs.Close(), "%s", stderr)
	deadline := time.Now().Add(10 * time.Second)
	for !(gone(serverPID) && gone(childPID)) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.True(t, gone(serverPID) && gone(childPID), "no process left behind")
}

// TestREADMEGatingFirstTool runs the README's first step of gating, as a
// newcomer on a fresh clone would: the example config, with the MCP server
// it names built where the README builds it, serves that server's tools
// and no built-in one, and the quote and call it shows complete.
func TestREADMEGatingFirstTool(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"sh", "curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(readme), "\n## Gating your MCP servers\n")
	require.True(t, found, "the README has a section on gating MCP servers")
	_, step, found := strings.Cut(section, "\nTo reach a gated MCP tool on a fresh clone")
	require.True(t, found, "the section has a first step")
	_, start, found := strings.Cut(step, "```sh\n")
	require.True(t, found)
	start, step, _ = strings.Cut(start, "```")
	require.Equal(t, "go build -o bin/notes-server ./internal/upstreamtest/cmd/upstreamtest-server\n"+
		"go run ./cmd/toolgate -config examples/gating/toolgate.json\n", start, "how the README builds and starts them")
	_, script, found := strings.Cut(step, "```sh\n")
	require.True(t, found, "the step's commands")
	script, _, _ = strings.Cut(script, "```")

	// A fresh clone's layout: the example config, and the MCP server built
	// where the README's first command puts it.
	clone := t.TempDir()
	example, err := os.ReadFile("../../examples/gating/toolgate.json")
	require.NoError(t, err)
	config := filepath.Join(clone, "examples", "gating", "toolgate.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(config), 0o755))
	require.NoError(t, os.WriteFile(config, example, 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(clone, "bin"), 0o755))
	require.NoError(t, os.Symlink(upstreamServerPath(t), filepath.Join(clone, "bin", "notes-server")))

	srv, base := startServer(t, []string{"-config", config, "-listen", "127.0.0.1:0"})
	out := runScript(t, strings.ReplaceAll(script, "http://127.0.0.1:8080", base))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, "the list, the quote, the call: %s", out)

	var slugs []string
	for _, m := range regexp.MustCompile(`"slug":"([^"]+)"`).FindAllStringSubmatch(lines[0], -1) {
		slugs = append(slugs, m[1])
	}
	assert.ElementsMatch(t, []string{"notes.echo", "notes.write-note"}, slugs, "the MCP server's tools, no built-in one")
	var quote, call map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &quote), "%s", out)
	assert.Equal(t, true, quote["policy"].(map[string]any)["callable"], "%s", out)
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &call), "%s", out)
	assert.Equal(t, "completed", call["status"], "%s", out)
	assert.Equal(t, "hello", call["output"].(map[string]any)["text"], "%s", out)

	// toolgate's own MCP server lists them alone too.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: withKey{"tg_dev_alice"}}}, nil)
	require.NoError(t, err)
	listed := mcpTools(t, cs)
	require.NoError(t, cs.Close())
	var names []string
	for name := range listed {
		names = append(names, name)
	}
	assert.ElementsMatch(t, slugs, names)
	assert.Equal(t, 0, srv.stop(exitTimeout))
}
