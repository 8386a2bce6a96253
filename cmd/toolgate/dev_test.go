package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/server"
)

// exportedKey is the key an "export NAME=" line of the server's stdout gives.
func exportedKey(t *testing.T, p *process, name string) string {
	t.Helper()
	return strings.TrimPrefix(p.waitLine("export "+name+"=", 10*time.Second), "export "+name+"=")
}

// TestDevKeysAreKeptAcrossRestarts: -dev-keys makes its file on first use,
// readable by its owner only, and a restart uses the same keys. The keys
// appear in the banner's export lines, as without -dev-keys, and nowhere
// else: not in the logs, not in the file's errors.
func TestDevKeysAreKeptAcrossRestarts(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "dev-keys.json")
	args := []string{"-offline", "-listen", "127.0.0.1:0", "-dev-keys", file}

	first, _ := startServer(t, args)
	keys := map[string]string{}
	for _, name := range []string{"TOOLGATE_KEY", "TOOLGATE_AGENT_KEY", "TOOLGATE_APPROVER_KEY"} {
		keys[name] = exportedKey(t, first, name)
	}
	assert.Contains(t, first.stdout.String(), `one API key for principal "dev" (kept in `+file+`)`)
	assert.Equal(t, 0, first.stop(exitTimeout))
	info, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "only its owner reads it")
	var kept server.DevKeys
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &kept))
	assert.Equal(t, server.DevKeys{Principal: keys["TOOLGATE_KEY"], Agent: keys["TOOLGATE_AGENT_KEY"], Approver: keys["TOOLGATE_APPROVER_KEY"]}, kept)

	second, base := startServer(t, args)
	for name, key := range keys {
		assert.Equal(t, key, exportedKey(t, second, name), "%s is the same after a restart", name)
	}
	dev := client{t: t, base: base, key: keys["TOOLGATE_KEY"]}
	_, _, quote := dev.quote("goal-data")
	assert.Equal(t, "0.1100", quote["quote"].(map[string]any)["totalUsd"])
	assert.Equal(t, 0, second.stop(exitTimeout))

	for _, p := range []*process{first, second} {
		for _, key := range keys {
			assert.NotContains(t, p.stderr.String(), key, "never logged")
			assert.Equal(t, 1, strings.Count(p.stdout.String(), key), "printed once, in its export line")
		}
	}
}

// TestDevKeysFromAFile: the keys of an existing file serve as they are,
// and a file that others can read, or that is not a keys file, is refused
// (exit 2) in one line that quotes nothing of it.
func TestDevKeysFromAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mine := server.DevKeys{Principal: "tg_devkeys_principal_8c41f0", Agent: "tg_devkeys_agent_8c41f0", Approver: "tg_devkeys_approver_8c41f0"}
	data, err := json.Marshal(mine)
	require.NoError(t, err)
	file := filepath.Join(dir, "keys.json")
	require.NoError(t, os.WriteFile(file, data, 0o600))

	srv, base := startServer(t, []string{"-offline", "-listen", "127.0.0.1:0", "-dev-keys", file})
	assert.Equal(t, mine.Principal, exportedKey(t, srv, "TOOLGATE_KEY"))
	assert.Equal(t, mine.Agent, exportedKey(t, srv, "TOOLGATE_AGENT_KEY"))
	assert.Equal(t, mine.Approver, exportedKey(t, srv, "TOOLGATE_APPROVER_KEY"))
	r := client{t: t, base: base, key: mine.Approver}.do(http.MethodGet, "/v1/approval-requests", nil)
	assert.Equal(t, http.StatusOK, r.status, "the approver key from the file works: %s", r.body)
	assert.Equal(t, 0, srv.stop(exitTimeout))
	assert.NotContains(t, srv.stderr.String(), mine.Principal)

	shared := filepath.Join(dir, "shared.json")
	require.NoError(t, os.WriteFile(shared, data, 0o600))
	require.NoError(t, os.Chmod(shared, 0o644))
	broken := filepath.Join(dir, "broken.json")
	require.NoError(t, os.WriteFile(broken, []byte(`{"principalKey": "tg_devkeys_leak_8c41f0", "agentKey": `), 0o600))
	same := filepath.Join(dir, "same.json")
	require.NoError(t, os.WriteFile(same, []byte(`{"principalKey": "tg_devkeys_twice_8c41f0", "agentKey": "tg_devkeys_twice_8c41f0", "approverKey": "tg_devkeys_third_8c41f0"}`), 0o600))
	for _, c := range []struct{ file, want string }{
		{shared, "toolgate: -dev-keys " + shared + ": others can read or change it (mode 0644); make it yours alone with chmod 600\n"},
		{broken, "toolgate: -dev-keys " + broken + `: is not a development keys file: a JSON object with "principalKey", "agentKey" and "approverKey", three different keys; remove it to make a new one` + "\n"},
		{same, "toolgate: -dev-keys " + same + `: is not a development keys file: a JSON object with "principalKey", "agentKey" and "approverKey", three different keys; remove it to make a new one` + "\n"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, exitUsage, run(t.Context(), []string{"-offline", "-listen", "127.0.0.1:0", "-dev-keys", c.file}, noEnv, &stdout, &stderr))
		assert.Equal(t, c.want, stderr.String())
		assert.Empty(t, stdout.String())
		assert.NotContains(t, stderr.String(), "8c41f0\"")
	}
}

// TestDevHelpWithLiveUpstreams: without -offline the example is a free
// call, and the banner says how to try a paid one.
func TestDevHelpWithLiveUpstreams(t *testing.T) {
	t.Parallel()
	dev, err := newDevSetup("")
	require.NoError(t, err)
	var live, offline bytes.Buffer
	dev.printHelp(&live, "http://127.0.0.1:8080", false)
	dev.printHelp(&offline, "http://127.0.0.1:8080", true)
	assert.Contains(t, live.String(), "/v1/tools/earthquake-search/call")
	assert.Contains(t, live.String(), "-offline counts goal-data's demo provider as one")
	assert.Contains(t, live.String(), "new on every start; -dev-keys FILE keeps them")
	assert.Contains(t, offline.String(), "/v1/tools/goal-data/call")
	assert.Contains(t, offline.String(), "counted as payment- and endpoint-verified")
}
