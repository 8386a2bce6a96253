//go:build unix

package mcpupstream_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/toolgatetest"
)

// The reference server of the MCP SDKs, pinned in testdata/everything
// (package.json and package-lock.json): an independent implementation of
// the protocol, in TypeScript.
var everything struct {
	once   sync.Once
	script string
	err    error
}

// everythingServer installs the pinned @modelcontextprotocol/server-everything
// with npm ci, once per lock file into the user's cache, and returns node
// and the server's script. Without npm or node the test is skipped, saying
// so, unless CI is "true": there the reference server must run.
func everythingServer(t *testing.T) (node, script string) {
	t.Helper()
	npm, errNPM := exec.LookPath("npm")
	node, errNode := exec.LookPath("node")
	if errNPM != nil || errNode != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("npm and node are required (CI=true): the tests against the reference MCP server @modelcontextprotocol/server-everything must run")
		}
		t.Skip("npm or node is not installed, so the tests against the reference MCP server @modelcontextprotocol/server-everything do not run (with CI=true they fail instead)")
	}
	everything.once.Do(func() { everything.script, everything.err = installEverything(npm) })
	require.NoError(t, everything.err)
	return node, everything.script
}

func installEverything(npm string) (string, error) {
	lock, err := os.ReadFile(filepath.Join("testdata", "everything", "package-lock.json"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(lock)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "toolgate-test", "server-everything-"+hex.EncodeToString(sum[:6]))
	script := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(script); err == nil {
		return script, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	staging, err := os.MkdirTemp(filepath.Dir(dir), "staging-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	for _, f := range []string{"package.json", "package-lock.json"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "everything", f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(staging, f), raw, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command(npm, "ci", "--prefix", staging, "--no-audit", "--no-fund", "--ignore-scripts")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &installError{err: err, out: string(out)}
	}
	if err := os.Rename(staging, dir); err != nil {
		if _, statErr := os.Stat(script); statErr == nil {
			return script, nil // another test process installed it meanwhile
		}
		return "", err
	}
	return script, nil
}

type installError struct {
	err error
	out string
}

func (e *installError) Error() string { return "npm ci: " + e.err.Error() + "\n" + e.out }

// freePort is a loopback port nothing listens on, as far as can be known.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// serveEverythingHTTP starts the reference server's streamable HTTP
// transport on a free port for the test's length, and returns its URL.
func serveEverythingHTTP(t *testing.T, node, script string) string {
	port := freePort(t)
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PORT=" + strconv.Itoa(port)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	eventually(t, "the reference server to listen", func() bool {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr + "/mcp"
}

func TestTheReferenceServerBehindTheGate(t *testing.T) {
	t.Parallel()
	node, script := everythingServer(t)
	const secret = "tg-everything-3d9e2a61-DISTINCTIVE"
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			cfg := mcpupstream.Server{ID: "everything", Defaults: mcpupstream.ToolConfig{Capabilities: declared()}}
			if transport == "stdio" {
				cfg.Command = []string{node, script, "stdio"}
				cfg.Env = map[string]mcpupstream.Value{"API_TOKEN": {Env: "TG_TEST_EVERYTHING_TOKEN"}}
			} else {
				cfg.URL = serveEverythingHTTP(t, node, script)
				cfg.Credential = &mcpupstream.Credential{Header: "Authorization", Scheme: "Bearer", Value: mcpupstream.Value{Env: "TG_TEST_EVERYTHING_TOKEN"}}
			}
			var log testLog
			g := gateway(t, nil)
			u := start(t, g.Registry, &mcpupstream.Options{Logger: log.logger(), LookupEnv: func(k string) (string, bool) {
				switch k {
				case "TG_TEST_EVERYTHING_TOKEN":
					return secret, true
				case "PATH", "HOME":
					return os.LookupEnv(k)
				}
				return "", false
			}}, cfg)
			require.Equal(t, "up", u.Health()["everything"], "%+v", u.Status())
			for _, slug := range []string{"everything.echo", "everything.get-sum", "everything.get-structured-content", "everything.get-env"} {
				_, err := g.Registry.Lookup(slug)
				require.NoError(t, err, slug)
			}
			e, err := g.Registry.Lookup("everything.echo")
			require.NoError(t, err)
			require.Equal(t, "Echo Tool", e.Tool.Name)

			res, err := call(t, g, "everything.echo", `{"message":"hello from toolgate"}`)
			out := toolgatetest.RequireCompleted(t, res, err, "0.0000")
			require.JSONEq(t, `{"content":[{"type":"text","text":"Echo: hello from toolgate"}]}`, string(out))

			res, err = call(t, g, "everything.get-structured-content", `{"location":"Chicago"}`)
			out = toolgatetest.RequireCompleted(t, res, err, "0.0000")
			var weather map[string]any
			require.NoError(t, json.Unmarshal(out, &weather))
			require.Contains(t, weather, "temperature", "structuredContent, checked against its output schema")

			_, err = call(t, g, "everything.get-sum", `{"a":"two","b":3}`)
			require.Error(t, err, "the upstream's input schema holds at the gate")

			if transport == "stdio" {
				res, err = call(t, g, "everything.get-env", `{}`)
				out = toolgatetest.RequireCompleted(t, res, err, "0.0000")
				var content struct{ Content []struct{ Text string } }
				require.NoError(t, json.Unmarshal(out, &content))
				var env map[string]string
				require.NoError(t, json.Unmarshal([]byte(content.Content[0].Text), &env))
				names := []string{}
				for k := range env {
					names = append(names, k)
				}
				require.Subset(t, []string{"PATH", "HOME", "API_TOKEN"}, names, "the child sees PATH, HOME and what the config names")
				require.Equal(t, "[redacted]", env["API_TOKEN"])
			}
			require.NotContains(t, log.String(), secret)
		})
	}
}
