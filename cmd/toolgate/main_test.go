package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testproc"
)

func noEnv(string) string { return "" }

// TestRunRefusesBadUsage: mistakes on the command line exit 2 with one
// line, said once, before anything listens.
func TestRunRefusesBadUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "toolgate: flag provided but not defined: -nope (see toolgate help serve)\n"},
		{"unknown double-dash flag", []string{"--nope"}, "toolgate: flag provided but not defined: -nope (see toolgate help serve)\n"},
		{"unknown command", []string{"srve"}, "toolgate: unknown command \"srve\": did you mean \"serve\"? (see toolgate help)\n"},
		{"stray argument", []string{"serve", "now"}, "toolgate: unexpected argument \"now\" (see toolgate help serve)\n"},
		{"bad -listen", []string{"-listen", "8080"}, "toolgate: -listen: \"8080\" is not a host:port address (see toolgate help serve)\n"},
		{"bad -metrics-listen", []string{"-metrics-listen", "9464"}, "toolgate: -metrics-listen: \"9464\" is not a host:port address (see toolgate help serve)\n"},
		{"-dev-keys with a config", []string{"-config", "toolgate.json", "-dev-keys", "keys.json"},
			"toolgate: -dev-keys keeps the development setup's keys, and a config has its own (see toolgate help serve)\n"},
		{"missing config file", []string{"-config", "/nonexistent/toolgate.json"},
			"toolgate: /nonexistent/toolgate.json: config: cannot read the config file: open /nonexistent/toolgate.json: no such file or directory\n"},
		{"a group without its command", []string{"tools"}, "toolgate tools: name a command (see toolgate help tools)\n"},
		{"an unknown command of a group", []string{"tools", "lint"}, "toolgate: unknown command \"tools lint\" (see toolgate help tools)\n"},
		{"help of nothing", []string{"help", "nope"}, "toolgate help: no command \"nope\" (see toolgate help)\n"},
		{"version with an argument", []string{"version", "now"}, "toolgate version: unexpected argument \"now\" (see toolgate help version)\n"},
		{"mcp with an argument", []string{"mcp", "now"}, "toolgate mcp: unexpected argument \"now\" (see toolgate help mcp)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, noEnv, &stdout, &stderr)
			assert.Equal(t, 2, code)
			assert.Equal(t, tt.want, stderr.String(), "one line, once")
			assert.Empty(t, stdout.String())
		})
	}
}

// TestRunHelp: help is asked for many ways, and every way prints it on
// stdout and exits 0.
func TestRunHelp(t *testing.T) {
	t.Parallel()
	toolgate := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, noEnv, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	// toolgate's own help lists every command, one line each, and the
	// server's flags.
	code, top, stderr := toolgate("-h")
	assert.Equal(t, 0, code)
	assert.Empty(t, stderr)
	for _, cmd := range commands {
		assert.Regexp(t, `(?m)^  `+regexp.QuoteMeta(cmd.Name)+` +\S.*$`, top, "%s has its line", cmd.Name)
	}
	for _, want := range []string{"  serve ", "  mcp ", "  tools check ", "  help ", "  version ", "-config", "-offline", "-listen", "-dev-keys"} {
		assert.Contains(t, top, want)
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-help"}} {
		code, out, stderr := toolgate(args...)
		assert.Equal(t, 0, code, "%v", args)
		assert.Equal(t, top, out, "%v", args)
		assert.Empty(t, stderr, "%v", args)
	}

	// Each command's help is the same by -h, -help, --help and help.
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve"}, []string{"Usage: toolgate serve [-config FILE]", "-listen", "-dev-keys"}},
		{[]string{"mcp"}, []string{"Usage: toolgate mcp ", "speaks the Model Context Protocol over stdio", "stdin and stdout", "-principal"}},
		{[]string{"tools", "check"}, []string{"Usage: toolgate tools check [-config FILE] [-strict] MANIFEST...", "-strict", "warning"}},
		{[]string{"tools"}, []string{"Usage: toolgate tools COMMAND", "  tools check "}},
		{[]string{"version"}, []string{"Usage: toolgate version"}},
		{[]string{"help"}, []string{"Usage: toolgate help [COMMAND]"}},
	} {
		_, want, _ := toolgate(append(slices.Clone(c.args), "-h")...)
		for _, flag := range []string{"-h", "-help", "--help"} {
			code, out, stderr := toolgate(append(slices.Clone(c.args), flag)...)
			assert.Equal(t, 0, code, "%v %s", c.args, flag)
			assert.Equal(t, want, out, "%v %s", c.args, flag)
			assert.Empty(t, stderr, "%v %s", c.args, flag)
		}
		if c.args[0] != "help" {
			code, out, _ := toolgate(append([]string{"help"}, c.args...)...)
			assert.Equal(t, 0, code, "help %v", c.args)
			assert.Equal(t, want, out, "help %v", c.args)
		}
		for _, w := range c.want {
			assert.Contains(t, strings.ToLower(want), strings.ToLower(w), "%v", c.args)
		}
	}
}

// TestRunVersion: toolgate version, -version and --version print one line.
func TestRunVersion(t *testing.T) {
	t.Parallel()
	var first string
	for _, args := range [][]string{{"version"}, {"-version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 0, run(context.Background(), args, noEnv, &stdout, &stderr), "%v", args)
		assert.Empty(t, stderr.String(), "%v", args)
		assert.Regexp(t, `^toolgate \S+( \S+)* go1\.\S+\n$`, stdout.String(), "%v", args)
		if first == "" {
			first = stdout.String()
		}
		assert.Equal(t, first, stdout.String())
	}
}

// TestRunCannotListen: an address in use is a failure to start (exit 1),
// said once, in one line that names the port and how to choose another.
func TestRunCannotListen(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	addr := taken.Addr().String()
	_, port, _ := net.SplitHostPort(addr)

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-offline", "-listen", addr}, noEnv, &stdout, &stderr)
	assert.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	require.Len(t, lines, 1, "said once: %s", stderr.String())
	assert.True(t, strings.HasPrefix(lines[0], "toolgate: cannot listen on "+addr+": port "+port+" is already in use"), lines[0])
	assert.Contains(t, lines[0], "choose another address with -listen")
	assert.Contains(t, lines[0], "-listen 127.0.0.1:0 for any free port")
	assert.Empty(t, stdout.String(), "no development key is printed for a server that is not running")
}

// TestRunMetricsListenFlag: two instances on one host share one config
// file, each given its own metrics address with -metrics-listen, which
// overrides the config's metricsListen (here an address already taken, so
// the server could not start if the flag were ignored).
func TestRunMetricsListenFlag(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	path := writeConfig(t, map[string]any{
		"listen":        "127.0.0.1:0",
		"metricsListen": taken.Addr().String(),
		"principals":    []any{map[string]any{"id": "alice", "apiKeys": []string{randomKey(t, "tg_test_metricsflag_")}}},
	})

	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		stdout, stderr := &testproc.SyncBuffer{}, &testproc.SyncBuffer{}
		exited := make(chan int, 1)
		go func() {
			exited <- run(ctx, []string{"-config", path, "-offline", "-metrics-listen", "127.0.0.1:0"}, noEnv, stdout, stderr)
		}()
		p := &process{t: t, stdout: stdout, stderr: stderr, exited: make(chan struct{})}
		metricsURL := strings.TrimPrefix(p.waitLine("toolgate metrics on http://127.0.0.1:", 10*time.Second), "toolgate metrics on ")
		assert.NotContains(t, metricsURL, taken.Addr().String(), "the flag overrides the config")

		resp, err := http.Get(metricsURL)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, string(body), "go_goroutines")

		cancel()
		assert.Equal(t, 0, <-exited, "%s", stderr.String())
	}
}

// TestRunStopsWhenCancelled runs the server in process: it listens, prints
// its address and the development key, and stops cleanly (exit 0) when its
// context is done, as on SIGTERM.
func TestRunStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &testproc.SyncBuffer{}, &testproc.SyncBuffer{}
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"-offline", "-listen", "127.0.0.1:0"}, noEnv, stdout, stderr) }()
	p := &process{t: t, stdout: stdout, stderr: stderr, exited: make(chan struct{})}
	line := p.waitLine("toolgate listening on http://127.0.0.1:", 10*time.Second)
	assert.NotEqual(t, "toolgate listening on http://127.0.0.1:0", line)
	key := strings.TrimPrefix(p.waitLine("export TOOLGATE_KEY=", 10*time.Second), "export TOOLGATE_KEY=")

	cancel()
	assert.Equal(t, 0, <-exited)
	assert.NotContains(t, stderr.String(), key)
	assert.Contains(t, stderr.String(), `"msg":"stopped"`)
}
