//go:build unix

package check

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// repoRoot is the toolgate module's directory, relative to this one. This
// module imports nothing of it: it builds its programs with the go tool, so
// the server checked is the one the repository ships, built with the root
// module's own dependencies.
const repoRoot = "../.."

// exitTimeout is how long a stopped server may take to exit; a clean stop
// takes milliseconds.
const exitTimeout = 15 * time.Second

// binaries are the programs the check runs: the server, and upstreamtest's
// MCP server, which the server starts as a child process.
type binaries struct {
	toolgate string
	upstream string
}

// buildBinaries builds both programs from the repository root into a
// temporary directory.
func buildBinaries(t *testing.T) binaries {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	dir := t.TempDir()
	bin := binaries{
		toolgate: filepath.Join(dir, "toolgate"),
		upstream: filepath.Join(dir, "upstreamtest-server"),
	}
	goBuild(t, bin.toolgate, "./cmd/toolgate")
	goBuild(t, bin.upstream, "./internal/upstreamtest/cmd/upstreamtest-server")
	return bin
}

func goBuild(t *testing.T, out, pkg string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err)
	cmd := exec.Command(goTool, "build", "-o", out, pkg)
	cmd.Dir = repoRoot
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, output)
}

// notesServer is the config of upstreamtest's server, as "notes": it keeps
// its state in dir and starts a child process of its own; write_note is
// priced, declared to write, and trusted.
func notesServer(path, dir string) map[string]any {
	return map[string]any{
		"id":      "notes",
		"command": []string{path},
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

func randomKey(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return prefix + hex.EncodeToString(b)
}

func writeConfig(t *testing.T, cfg any) string {
	t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "toolgate.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// process is a running server binary.
type process struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{} // closed once the process has exited
	err    error         // from Wait, set before exited is closed
}

// startServer runs the server binary with args and extra environment, and
// returns it with its base URL, read from the line it prints once
// listening. The environment never carries TOOLGATE_CONFIG from the test's
// own, so only what the test passes configures the server.
func startServer(t *testing.T, binary string, args []string, env ...string) (*process, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLGATE_CONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	p := &process{t: t, cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("server stdout:\n%s\nserver stderr:\n%s", p.stdout, p.stderr)
		}
	})
	line := p.waitLine("toolgate listening on ", 60*time.Second)
	return p, strings.TrimPrefix(line, "toolgate listening on ")
}

// waitLine waits for a line of stdout that starts with prefix.
func (p *process) waitLine(prefix string, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		lines := strings.Split(p.stdout.String(), "\n")
		for _, line := range lines[:len(lines)-1] { // the last may be partly written
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
				return prefix + rest
			}
		}
		select {
		case <-p.exited:
			p.t.Fatalf("the server exited (%v) before printing %q", p.err, prefix)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no line starting with %q on stdout within %s", prefix, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM and returns the exit code.
func (p *process) stop(timeout time.Duration) int {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.t.Fatalf("the server did not exit within %s", timeout)
	}
	if p.err == nil {
		return 0
	}
	var exit *exec.ExitError
	require.ErrorAs(p.t, p.err, &exit)
	return exit.ExitCode()
}

// syncBuffer is a bytes.Buffer safe for the process's writes and the
// test's reads at the same time.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// client talks to a server as one caller.
type client struct {
	t    *testing.T
	base string
	key  string
}

type response struct {
	status int
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

func (c client) do(method, path string, body any, header ...string) response {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	require.NoError(c.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return response{status: resp.StatusCode, body: b}
}

// quote quotes a tool and returns the quote's id and manifest digest.
func (c client) quote(slug string) (id, digest string, body map[string]any) {
	c.t.Helper()
	r := c.do(http.MethodPost, "/v1/tools/"+slug+"/quote", nil)
	require.Equal(c.t, http.StatusCreated, r.status, "quote %s: %s", slug, r.body)
	body = r.json(c.t)
	q := body["quote"].(map[string]any)
	return q["id"].(string), q["manifestDigest"].(string), body
}

// call calls a tool with an approval of digest.
func (c client) call(slug, quoteID, digest, idemKey string, input any) response {
	c.t.Helper()
	return c.do(http.MethodPost, "/v1/tools/"+slug+"/call", map[string]any{
		"quoteId":  quoteID,
		"input":    input,
		"approval": map[string]any{"manifestDigest": digest},
	}, "Idempotency-Key", idemKey)
}
