package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testproc"
)

// startProcessIn is startProcess with the process's working directory set
// to dir.
func startProcessIn(t *testing.T, dir string, args []string, env ...string) *process {
	t.Helper()
	return startBinaryIn(t, toolgateBinary(t), dir, args, env...)
}

// startBinaryIn runs a built program as startProcessIn runs the server.
func startBinaryIn(t *testing.T, bin, dir string, args []string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLGATE_CONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	p := &process{t: t, cmd: cmd, stdout: &testproc.SyncBuffer{}, stderr: &testproc.SyncBuffer{}, exited: make(chan struct{})}
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
	return p
}

// TestRelativeConfigPathFromAnotherDirectory: an operator in one directory
// starts the server with a config named by a relative path into another.
// The config's own relative paths (a manifest glob, a SQLite file) are
// taken from the config file's directory, not from where the command ran:
// the manifest's tool is served and callable, and the database is made
// beside the config. tools check, given the same config, agrees.
func TestRelativeConfigPathFromAnotherDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cwd := filepath.Join(root, "operator")
	require.NoError(t, os.MkdirAll(cwd, 0o755))
	openaqKey := randomKey(t, "openaq-secret-")
	openaq := newKeyEchoingProvider(t, "X-API-Key", openaqKey, "openaq-latest.json")
	writeManifest(t, root, "deploy/tools/openaq-latest.json", exampleManifest(t, "openaq-latest.json"))
	aliceKey := randomKey(t, "tg_test_alice_")
	writeManifest(t, root, "deploy/toolgate.json", map[string]any{
		"listen":     "127.0.0.1:0",
		"storage":    "sqlite:toolgate.db",
		"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{aliceKey}}},
		"tools":      []string{"tools/*.json"},
		"upstreams":  map[string]string{"openaq-latest": openaq.URL},
	})
	config := filepath.Join("..", "deploy", "toolgate.json")

	p := startProcessIn(t, cwd, []string{"-config", config}, "OPENAQ_API_KEY="+openaqKey)
	line := p.waitLine("toolgate listening on ", 60*time.Second)
	base := strings.TrimPrefix(line, "toolgate listening on ")
	alice := client{t: t, base: base, key: aliceKey}
	r := alice.do(http.MethodGet, "/v1/registry/tools/openaq-latest", nil)
	assert.Equal(t, http.StatusOK, r.status, "%s", r.body)
	quoteID, digest, _ := alice.quote("openaq-latest")
	r = alice.call("openaq-latest", quoteID, digest, "relative-1", map[string]any{"locationId": 2178})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"], "%s", r.body)
	assert.Equal(t, 0, p.stop(exitTimeout))
	assert.FileExists(t, filepath.Join(root, "deploy", "toolgate.db"))
	assert.NoFileExists(t, filepath.Join(cwd, "toolgate.db"))

	check := startProcessIn(t, cwd, []string{"tools", "check", "-config", config,
		filepath.Join("..", "deploy", "tools", "openaq-latest.json")}, "OPENAQ_API_KEY="+openaqKey)
	assert.Equal(t, 0, check.wait(exitTimeout), "%s", check.stderr)
	assert.Regexp(t, `^openaq-latest [0-9]+ `+regexp.QuoteMeta(digest)+"\n$", check.stdout.String(),
		"the digest the server served")
}
