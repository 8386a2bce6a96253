package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/internal/testproc"
)

// The server binary, built once for every end-to-end test,
// upstreamtest's MCP server, which the server starts as a child process,
// and the development identity provider the README tries tokens with.
var binary, upstreamServer, devIdp testproc.Binary

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	binary.Remove()
	upstreamServer.Remove()
	devIdp.Remove()
	os.Exit(code)
}

// toolgateBinary builds ./cmd/toolgate, with -race when the tests run with
// it, so the end-to-end tests race-check the server too.
func toolgateBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("the end-to-end tests stop the server with SIGTERM")
	}
	path, _ := binary.Build(t, ".", raceEnabled)
	return path
}

// process is a running server binary.
type process struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout *testproc.SyncBuffer
	stderr *testproc.SyncBuffer
	exited chan struct{} // closed once the process has exited
	err    error         // from Wait, set before exited is closed
}

// startProcess runs the server binary with args and extra environment. The
// environment never carries TOOLGATE_CONFIG from the test's own, so only
// what a test passes configures the server.
func startProcess(t *testing.T, args []string, env ...string) *process {
	t.Helper()
	return startProcessIn(t, "", args, env...)
}

// startServer starts the server and returns it with its base URL, read
// from the line it prints once listening.
func startServer(t *testing.T, args []string, env ...string) (*process, string) {
	t.Helper()
	p := startProcess(t, args, env...)
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

// wait waits for the process to exit and returns its exit code.
func (p *process) wait(timeout time.Duration) int {
	p.t.Helper()
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

// stop sends SIGTERM and returns the exit code.
func (p *process) stop(timeout time.Duration) int {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	return p.wait(timeout)
}

// logLines parses stderr as JSON log lines, failing on any line that is not.
func (p *process) logLines() []map[string]any {
	p.t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(p.stderr.String()), "\n") {
		var rec map[string]any
		require.NoError(p.t, json.Unmarshal([]byte(line), &rec), "a log line is not JSON: %s", line)
		out = append(out, rec)
	}
	return out
}

// client talks to a server as one caller.
type client struct {
	t    *testing.T
	base string
	key  string // "" sends no Authorization header
}

type response struct {
	status int
	header http.Header
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
	r, err := c.send(method, path, body, header...)
	require.NoError(c.t, err)
	return r
}

// send is do for a goroutine other than the test's, which must not fail the test itself.
func (c client) send(method, path string, body any, header ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return response{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}, err
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
	r, err := c.sendCall(slug, quoteID, digest, idemKey, input)
	require.NoError(c.t, err)
	return r
}

func (c client) sendCall(slug, quoteID, digest, idemKey string, input any) (response, error) {
	return c.send(http.MethodPost, "/v1/tools/"+slug+"/call", map[string]any{
		"quoteId":  quoteID,
		"input":    input,
		"approval": map[string]any{"manifestDigest": digest},
	}, "Idempotency-Key", idemKey)
}
