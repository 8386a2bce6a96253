package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/goalprovider"
	"github.com/toolgate/toolgate/tools/recorded"
)

// exitTimeout is how long a stopped server may take to exit. Generous for
// a race-enabled binary on a busy machine; a clean stop takes milliseconds.
const exitTimeout = 15 * time.Second

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

// upstreamsAt points every tool at origin, goal-data at goalOrigin.
func upstreamsAt(origin, goalOrigin string) map[string]string {
	return map[string]string{
		"earthquake-search": origin,
		"exchange-rates":    origin,
		"public-holidays":   origin,
		"current-weather":   origin,
		"goal-data":         goalOrigin,
	}
}

// TestServerEndToEnd runs the built server against local upstreams and walks
// the whole flow over real HTTP, then stops it with SIGTERM.
func TestServerEndToEnd(t *testing.T) {
	t.Parallel()
	providers := httptest.NewServer(recorded.Handler())
	defer providers.Close()
	goal := httptest.NewServer(goalprovider.New())
	defer goal.Close()

	aliceKey := randomKey(t, "tg_test_alice_")
	bobKey := randomKey(t, "tg_test_bob_") // given to the server only as its digest
	path := writeConfig(t, map[string]any{
		"listen":   "127.0.0.1:0",
		"storage":  "memory",
		"quoteTTL": "2m",
		"feeRate":  "0.10",
		"principals": []any{
			map[string]any{"id": "alice", "apiKeys": []string{aliceKey},
				"spendControls": map[string]any{"dailyLimitUsd": "10.0000",
					"tools": map[string]any{"goal-data": map[string]any{"allowed": true, "dailyLimitUsd": "0.2200"}}}},
			map[string]any{"id": "bob", "apiKeySha256": []string{sha256Hex(bobKey)}},
		},
		"upstreams": upstreamsAt(providers.URL, goal.URL),
		"trust":     map[string]any{"goal-data": map[string]any{"paymentVerified": true, "endpointVerified": true}},
	})
	srv, base := startServer(t, []string{"-config", path})
	alice := client{t: t, base: base, key: aliceKey}
	bob := client{t: t, base: base, key: bobKey}
	anonymous := client{t: t, base: base}

	// Health and the public registry.
	r := anonymous.do(http.MethodGet, "/healthz", nil)
	require.Equal(t, http.StatusOK, r.status)
	r = anonymous.do(http.MethodGet, "/v1/registry/tools", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	list := r.json(t)
	assert.EqualValues(t, 5, list["total"])
	assert.Len(t, list["tools"], 5)

	// Quote, then call with the approved digest.
	quoteID, digest, q := alice.quote("earthquake-search")
	assert.Equal(t, true, q["policy"].(map[string]any)["callable"])
	assert.Equal(t, true, q["controls"].(map[string]any)["approved"])
	input := map[string]any{"starttime": "2024-09-25", "endtime": "2024-09-30"}
	first := alice.call("earthquake-search", quoteID, digest, "e2e-earthquake-1", input)
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	exec := first.json(t)
	assert.Equal(t, "completed", exec["status"], "%s", first.body)
	assert.Nil(t, exec["error"])
	execID := exec["id"].(string)
	assert.Equal(t, execID, first.header.Get("Toolgate-Execution-Id"))
	assert.Empty(t, first.header.Get("Idempotent-Replayed"))
	features := exec["output"].(map[string]any)["features"].([]any)
	assert.Len(t, features, 10, "the recorded USGS answer, served by the local upstream")

	// The same call again is a replay, byte for byte.
	again := alice.call("earthquake-search", quoteID, digest, "e2e-earthquake-1", input)
	require.Equal(t, http.StatusOK, again.status, "%s", again.body)
	assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	assert.Equal(t, execID, again.header.Get("Toolgate-Execution-Id"))
	assert.Equal(t, string(first.body), string(again.body))

	// The execution is alice's to read, and no one else's.
	r = alice.do(http.MethodGet, "/v1/executions/"+execID, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, execID, r.json(t)["id"])
	r = bob.do(http.MethodGet, "/v1/executions/"+execID, nil)
	assert.Equal(t, http.StatusNotFound, r.status, "bob authenticates by his key's digest, and sees only his own: %s", r.body)

	// goal-data, made payment-verified by the config, is paid and callable.
	quoteID, digest, q = alice.quote("goal-data")
	assert.Equal(t, "0.1100", q["quote"].(map[string]any)["totalUsd"])
	assert.Equal(t, true, q["policy"].(map[string]any)["callable"], "%v", q["policy"])
	tool := q["controls"].(map[string]any)["tool"].(map[string]any)
	assert.Equal(t, "0.2200", tool["dailyLimitUsd"], "the config's per-tool limit is in force")
	r = alice.call("goal-data", quoteID, digest, "e2e-goal-1", map[string]any{"goal": "reach the summit", "step": 3})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	paid := r.json(t)
	assert.Equal(t, "completed", paid["status"], "%s", r.body)
	cost := paid["cost"].(map[string]any)
	assert.Equal(t, map[string]any{"priceUsd": "0.1000", "feeUsd": "0.0100", "totalUsd": "0.1100", "currency": "USD"}, cost)
	assert.Equal(t, "verified-demo-datum-3", paid["output"].(map[string]any)["datum"])
	assert.Equal(t, true, paid["output"].(map[string]any)["goalAchieved"])

	// No key, no quote.
	r = anonymous.do(http.MethodPost, "/v1/tools/earthquake-search/quote", nil)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer"), r.header.Get("WWW-Authenticate"))
	assert.Equal(t, "unauthorized", r.json(t)["error"].(map[string]any)["code"])

	// SIGTERM stops it cleanly.
	assert.Equal(t, 0, srv.stop(exitTimeout))

	// Logs are JSON, one line per request, and never hold a key.
	logs := srv.logLines()
	stderr := srv.stderr.String()
	for _, key := range []string{aliceKey, bobKey} {
		assert.NotContains(t, stderr, key)
		assert.NotContains(t, srv.stdout.String(), key)
	}
	var sawCall, sawStopped bool
	for _, rec := range logs {
		if rec["msg"] == "request" && rec["path"] == "/v1/tools/goal-data/call" {
			sawCall = true
			assert.Equal(t, "POST", rec["method"])
			assert.EqualValues(t, 200, rec["status"])
			assert.Contains(t, rec, "durationMs")
		}
		sawStopped = sawStopped || rec["msg"] == "stopped"
	}
	assert.True(t, sawCall, "a log line for the goal-data call:\n%s", stderr)
	assert.True(t, sawStopped, "a stopped line:\n%s", stderr)
}

// TestServerRefusesBadConfig: a config mistake is a clear message naming
// the field, exit code 2, and no stack trace.
func TestServerRefusesBadConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"listn": "127.0.0.1:0"}`), 0o600))

	srv := startProcess(t, nil, "TOOLGATE_CONFIG="+path) // named by the environment, not the flag
	assert.Equal(t, 2, srv.wait(exitTimeout))
	stderr := srv.stderr.String()
	assert.Equal(t, "toolgate: "+path+`: config: unknown field "listn": did you mean "listen"?`+"\n", stderr)
	assert.NotContains(t, stderr, "goroutine")
	assert.NotContains(t, stderr, "panic")
	assert.Empty(t, srv.stdout.String(), "nothing listens, so nothing is printed")
}

// TestServerOfflineDevelopmentSetup: with no config and -offline, the
// printed development key works and a call completes with no upstream at
// all, and so do the example commands the server prints.
func TestServerOfflineDevelopmentSetup(t *testing.T) {
	t.Parallel()
	srv, base := startServer(t, []string{"-offline", "-listen", "127.0.0.1:0"})
	key := strings.TrimPrefix(srv.waitLine("export TOOLGATE_KEY=", 10*time.Second), "export TOOLGATE_KEY=")
	require.Regexp(t, `^tg_dev_[0-9a-f]{32}$`, key)

	dev := client{t: t, base: base, key: key}
	quoteID, digest, _ := dev.quote("earthquake-search")
	r := dev.call("earthquake-search", quoteID, digest, "offline-1", map[string]any{"starttime": "2024-09-25"})
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	exec := r.json(t)
	assert.Equal(t, "completed", exec["status"], "%s", r.body)
	assert.Len(t, exec["output"].(map[string]any)["features"], 10)

	t.Run("printed commands", func(t *testing.T) {
		runPrintedCommands(t, srv, key)
	})

	assert.Equal(t, 0, srv.stop(exitTimeout))
	assert.NotContains(t, srv.stderr.String(), key, "the key is printed on stdout, never logged")
	srv.logLines()
}

// runPrintedCommands runs the shell commands the offline development
// setup prints (the README's quick start), as a developer would paste
// them: a paid call of goal-data, then the spend it made.
func runPrintedCommands(t *testing.T, srv *process, key string) {
	for _, tool := range []string{"sh", "curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	var script []string
	for _, line := range strings.Split(srv.stdout.String(), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "QUOTE") || strings.HasPrefix(line, "curl ") {
			script = append(script, line)
		}
	}
	require.Len(t, script, 4, "the quote, the extraction of its id and digest, the call, the spend")
	out := runScript(t, strings.Join(script, "\n"), "TOOLGATE_KEY="+key)
	requirePaidCall(t, out)
}

// runScript runs a shell script with the environment and extra variables,
// and returns what it printed.
func runScript(t *testing.T, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// requirePaidCall checks what the quick start's paid call prints: the
// quote of goal-data at 0.1000 USD and a 0.0100 USD fee, the call
// completed and charged that, and the spend that says so.
func requirePaidCall(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, "the quote, the call, the spend: %s", out)
	var quote, call, spend map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &quote), "%s", out)
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &call), "%s", out)
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &spend), "%s", out)
	q := quote["quote"].(map[string]any)
	assert.Equal(t, []any{"0.1000", "0.0100", "0.1100"}, []any{q["priceUsd"], q["feeUsd"], q["totalUsd"]}, "a price, not $0")
	assert.Equal(t, true, quote["policy"].(map[string]any)["callable"], "%s", out)
	assert.Equal(t, "completed", call["status"], "%s", out)
	assert.Equal(t, "0.1100", call["cost"].(map[string]any)["totalUsd"], "%s", out)
	assert.Equal(t, "reach the summit", call["output"].(map[string]any)["goal"], "%s", out)
	assert.Equal(t, "0.1100", spend["totalUsd"], "charged once: %s", out)
}

// TestServerDrainsCallsInFlight: SIGTERM during a call lets it finish with
// its result before the process exits.
func TestServerDrainsCallsInFlight(t *testing.T) {
	t.Parallel()
	recordings := recorded.Handler()
	arrived := make(chan struct{})
	var once sync.Once
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		time.Sleep(time.Second)
		recordings.ServeHTTP(w, r)
	}))
	defer slow.Close()

	key := randomKey(t, "tg_test_")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"principals": []any{map[string]any{"id": "carol", "apiKeys": []string{key}}},
		"upstreams":  map[string]string{"earthquake-search": slow.URL},
	})
	srv, base := startServer(t, []string{"-config", path})
	carol := client{t: t, base: base, key: key}
	quoteID, digest, _ := carol.quote("earthquake-search")

	type result struct {
		r   response
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := carol.sendCall("earthquake-search", quoteID, digest, "in-flight-1", map[string]any{"starttime": "2024-09-25"})
		done <- result{r, err}
	}()
	select {
	case <-arrived:
	case <-time.After(exitTimeout):
		t.Fatal("the call never reached the upstream")
	}
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))

	var res result
	select {
	case res = <-done:
	case <-time.After(exitTimeout):
		t.Fatal("the call in flight never returned")
	}
	require.NoError(t, res.err)
	r := res.r
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"], "%s", r.body)
	assert.Equal(t, 0, srv.wait(exitTimeout))
}

// TestServerWithPostgres runs the server on PostgreSQL (when
// TOOLGATE_TEST_POSTGRES_URL names one): the schema is created at start,
// and a call made before a restart is still there, and still replays,
// after it.
func TestServerWithPostgres(t *testing.T) {
	t.Parallel()
	url := os.Getenv("TOOLGATE_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("TOOLGATE_TEST_POSTGRES_URL is not set")
	}
	key := randomKey(t, "tg_test_pg_")
	path := writeConfig(t, map[string]any{
		"listen":  "127.0.0.1:0",
		"storage": url,
		// A principal of its own, so that runs sharing the database never meet.
		"principals": []any{map[string]any{"id": randomKey(t, "pg-e2e-"), "apiKeys": []string{key}}},
	})

	srv, base := startServer(t, []string{"-config", path, "-offline"})
	c := client{t: t, base: base, key: key}
	quoteID, digest, _ := c.quote("earthquake-search")
	input := map[string]any{"starttime": "2024-09-25"}
	first := c.call("earthquake-search", quoteID, digest, "pg-1", input)
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	assert.Equal(t, "completed", first.json(t)["status"], "%s", first.body)
	require.Equal(t, 0, srv.stop(exitTimeout))
	assert.NotContains(t, srv.stderr.String(), url, "the database URL may hold a password: it is never logged")
	srv.logLines()

	srv, base = startServer(t, []string{"-config", path, "-offline"})
	c.base = base
	r := c.do(http.MethodGet, "/v1/executions/"+first.header.Get("Toolgate-Execution-Id"), nil)
	assert.Equal(t, http.StatusOK, r.status, "%s", r.body)
	again := c.call("earthquake-search", quoteID, digest, "pg-1", input)
	assert.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	assert.Equal(t, string(first.body), string(again.body))
	assert.Equal(t, 0, srv.stop(exitTimeout))
}

// TestREADMEQuickStartPaidCall runs the README's getting started as a
// newcomer would paste it: the server started with the command as written,
// in the directory it is run from, where it keeps its keys in the file it
// names; the first paid call, quoted, made and charged, and the spend that
// says so. The lines that get the binary are checked, not run (go install
// needs the network): they name this module's command, and a clone's build
// writes where git ignores.
func TestREADMEQuickStartPaidCall(t *testing.T) {
	t.Parallel()
	requireShellTools(t)
	section := readmeSection(t, "Getting started")
	blocks := shellBlocks(section)
	require.Len(t, blocks, 5, "install, start, paid call, asking for approval, the call with the grant")
	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	module, _, _ := strings.Cut(strings.TrimPrefix(string(gomod), "module "), "\n")
	require.Equal(t, "go install "+module+"/cmd/toolgate@latest", blocks[0], "how to get the binary")

	build := regexp.MustCompile("`(go build [^`]*)`").FindStringSubmatch(section)
	require.NotNil(t, build, "how to build the binary from a clone")
	require.Equal(t, []string{"go", "build", "-o", "bin/toolgate", "./cmd/toolgate"}, strings.Fields(build[1]))
	requireIgnoredByGit(t, "bin/toolgate")

	// The server as the README starts it, in a directory of its own; only
	// the port is the test's, so that tests can run side by side.
	start := strings.Fields(blocks[1])
	require.Equal(t, "toolgate", start[0], "the README runs the binary it said how to get")
	dir := t.TempDir()
	srv := startProcessIn(t, dir, append(start[1:], "-listen", "127.0.0.1:0"))
	base := strings.TrimPrefix(srv.waitLine("toolgate listening on ", 60*time.Second), "toolgate listening on ")
	key := strings.TrimPrefix(srv.waitLine("export TOOLGATE_KEY=", 10*time.Second), "export TOOLGATE_KEY=")
	assert.Len(t, regexp.MustCompile(`(?m)^\s*export TOOLGATE_(\w+_)?KEY=`).FindAllString(srv.stdout.String(), -1), 3, "three export lines")
	keys, err := os.Stat(filepath.Join(dir, "dev-keys.json"))
	require.NoError(t, err, "the keys are kept in the file the command names")
	assert.Equal(t, os.FileMode(0o600), keys.Mode().Perm(), "readable by the user alone")
	requireIgnoredByGit(t, "dev-keys.json") // the command, run in a clone, writes it there

	out := runScript(t, strings.ReplaceAll(blocks[2], "http://127.0.0.1:8080", base), "TOOLGATE_KEY="+key)
	requirePaidCall(t, out)
	assert.Equal(t, 0, srv.stop(exitTimeout))
}

// TestGitIgnoresWhatTryingTheServerLeaves: the files the README's commands
// write into a clone, secrets among them, are never committed by mistake.
func TestGitIgnoresWhatTryingTheServerLeaves(t *testing.T) {
	t.Parallel()
	for _, path := range []string{
		"dev-keys.json",   // -dev-keys: the development keys
		"receipts.pem",    // openssl genpkey: the receipt signing key
		"receipts.jsonl",  // toolgate receipts export
		"toolgate.db",     // "storage": "sqlite:toolgate.db", which keeps the sealing key
		"toolgate.db-wal", // and its write-ahead log
		"toolgate.db-shm", // and its shared memory
		".pins-1234.json", // a pins update cut short
		"examples/dev.db", // anywhere in the clone, not only at its root
	} {
		requireIgnoredByGit(t, path)
	}
}

// requireShellTools skips a test of the README's shell commands where
// they cannot run.
func requireShellTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"sh", "curl", "sed"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

// readmeSection returns the README's section under "## heading", up to the
// next one.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(readme), "\n## "+heading+"\n")
	require.True(t, found, "the README has a section %q", heading)
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// shellBlocks returns the sh code blocks of a README section, in order.
func shellBlocks(section string) []string {
	var blocks []string
	for _, block := range strings.Split(section, "```sh\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		blocks = append(blocks, strings.TrimSpace(block))
	}
	return blocks
}

// requireIgnoredByGit checks that git ignores path, relative to the
// repository's root, so that what the README's commands leave in a clone
// is never committed by mistake. It skips outside a git checkout.
func requireIgnoredByGit(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", "rev-parse", "--is-inside-work-tree")
	cmd.Dir = "../.."
	if err := cmd.Run(); err != nil {
		t.Skip("not in a git checkout")
	}
	cmd = exec.Command("git", "check-ignore", "--no-index", "-q", path)
	cmd.Dir = "../.."
	assert.NoError(t, cmd.Run(), "git ignores %s", path)
}
