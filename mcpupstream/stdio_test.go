//go:build unix

package mcpupstream_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// stdio is upstreamtest's server as a child process keeping its state in
// dir, with the operator's word on its tools.
func stdio(t *testing.T, id, dir string, tools map[string]mcpupstream.ToolConfig, env map[string]mcpupstream.Value) mcpupstream.Server {
	if env == nil {
		env = map[string]mcpupstream.Value{}
	}
	env["UPSTREAMTEST_STATE"] = mcpupstream.Value{Literal: dir}
	return mcpupstream.Server{ID: id, Command: []string{stdioServerPath(t)}, Env: env,
		Defaults: mcpupstream.ToolConfig{Capabilities: declared()}, Tools: tools}
}

// pidIn reads a pid a test server wrote.
func pidIn(t *testing.T, dir, file string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	return pid
}

// alive reports whether pid is a process that has not ended: neither gone
// nor a zombie waiting to be reaped.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc: the signal check is all there is
	}
	// pid (comm) state ...: the state follows the last ")".
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func TestAProcessThatDiesMidCallLeavesAnUnsafeCallAmbiguous(t *testing.T) {
	t.Parallel()
	g := gateway(t, nil)
	dir := t.TempDir()
	u := start(t, g.Registry, nil, stdio(t, "std", dir, map[string]mcpupstream.ToolConfig{upstreamtest.Flaky: writes}, nil))
	res, err := call(t, g, "std.flaky", `{}`)
	require.NoError(t, err)
	e := res.Execution
	require.Equal(t, toolgatetype.StatusAmbiguous, e.Status, "it may have run")
	require.Equal(t, toolgatetype.CodeOutcomeUnknown, e.Error.Code)
	require.Contains(t, e.Error.Message, "broke before it answered")
	require.Equal(t, 1, upstreamtest.RunsIn(dir, upstreamtest.Flaky), "not sent again")
	eventually(t, "the process to be started again", func() bool { return u.Health()["std"] == "up" })
	require.Equal(t, 1, upstreamtest.RunsIn(dir, upstreamtest.Flaky))
}

func TestAProcessThatDiesMidCallIsRetriedOnceForARetrySafeTool(t *testing.T) {
	t.Parallel()
	g := gateway(t, nil)
	dir := t.TempDir()
	idempotent := mcpupstream.ToolConfig{Capabilities: &registry.Capabilities{Idempotent: registry.Bool(true), ReadOnly: registry.Bool(false)}}
	start(t, g.Registry, nil, stdio(t, "std", dir, map[string]mcpupstream.ToolConfig{upstreamtest.Flaky: idempotent}, nil))
	res, err := call(t, g, "std.flaky", `{}`)
	out := toolgatetest.RequireCompleted(t, res, err, "0.0000")
	require.JSONEq(t, `{"attempt":2}`, string(out), "the second run, on the process started again")
	require.Equal(t, 2, upstreamtest.RunsIn(dir, upstreamtest.Flaky))
}

func TestAnUpstreamKilledMidCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		retrySafe bool
		want      toolgatetype.Status
		runs      int
	}{
		{"not retry-safe: ambiguous", false, toolgatetype.StatusAmbiguous, 1},
		{"retry-safe (the operator says): one retried success", true, toolgatetype.StatusCompleted, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := gateway(t, nil)
			dir := t.TempDir()
			slow := writes
			slow.Trust.RetrySafe = registry.Bool(tc.retrySafe)
			start(t, g.Registry, nil, stdio(t, "std", dir, map[string]mcpupstream.ToolConfig{upstreamtest.Slow: slow}, nil))
			pid := pidIn(t, dir, "server.pid")
			go func() {
				for upstreamtest.RunsIn(dir, upstreamtest.Slow) == 0 {
					time.Sleep(5 * time.Millisecond)
				}
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}()
			res, err := call(t, g, "std.slow", `{"ms":1500}`)
			require.NoError(t, err)
			require.Equal(t, tc.want, res.Execution.Status)
			require.Equal(t, tc.runs, upstreamtest.RunsIn(dir, upstreamtest.Slow))
			if tc.want == toolgatetype.StatusCompleted {
				require.JSONEq(t, `{"content":[{"type":"text","text":"done"}]}`, string(res.Execution.Output))
			}
		})
	}
}

func TestAStdioServerSeesOnlyPathHomeAndItsEnvAndSecretsStayOut(t *testing.T) {
	t.Parallel()
	const secret = "tg-secret-7f3a9c1e-DISTINCTIVE"
	gatewayEnv := map[string]string{"PATH": os.Getenv("PATH"), "HOME": "/home/gateway", "TEST_MCP_SECRET": secret, "GATEWAY_ONLY": "not for children"}
	secretFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"-file\n"), 0o600))
	var log testLog
	g := gateway(t, nil)
	dir := t.TempDir()
	start(t, g.Registry, &mcpupstream.Options{Logger: log.logger(), LookupEnv: func(k string) (string, bool) { v, ok := gatewayEnv[k]; return v, ok }},
		stdio(t, "std", dir, nil, map[string]mcpupstream.Value{
			"PLAIN":        {Literal: "visible"},
			"SECRET_TOKEN": {Env: "TEST_MCP_SECRET"},
			"FILE_TOKEN":   {File: secretFile},
		}))
	res, err := call(t, g, "std.env", `{}`)
	out := toolgatetest.RequireCompleted(t, res, err, "0.0000")
	var got struct{ Env map[string]string }
	require.NoError(t, json.Unmarshal(out, &got))
	names := make([]string, 0, len(got.Env))
	for k := range got.Env {
		names = append(names, k)
	}
	require.ElementsMatch(t, []string{"PATH", "HOME", "PLAIN", "SECRET_TOKEN", "FILE_TOKEN", "UPSTREAMTEST_STATE"}, names)
	require.Equal(t, "/home/gateway", got.Env["HOME"])
	require.Equal(t, "visible", got.Env["PLAIN"])
	require.Equal(t, "[redacted]", got.Env["SECRET_TOKEN"], "the upstream echoed a secret; the output does not")
	require.Equal(t, "[redacted]", got.Env["FILE_TOKEN"])

	stored, err := g.GetExecution(context.Background(), "alice", res.Execution.ID)
	require.NoError(t, err)
	require.NotContains(t, string(stored.Body), secret, "nor the stored record")
	entries, _, err := g.List(context.Background(), "", 100, 0, toolgatetype.EntryOptions{})
	require.NoError(t, err)
	raw, err := json.Marshal(entries)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret, "nor the registry")
	require.NotContains(t, log.String(), secret, "nor the log")
}

func TestStoppingLeavesNoProcessBehind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]mcpupstream.Value
	}{
		{"a process and the child it started", map[string]mcpupstream.Value{"UPSTREAMTEST_CHILD": {Literal: "1"}}},
		{"a process that ignores SIGTERM", map[string]mcpupstream.Value{"UPSTREAMTEST_CHILD": {Literal: "1"}, "UPSTREAMTEST_IGNORE_TERM": {Literal: "1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := gateway(t, nil)
			dir := t.TempDir()
			u, err := mcpupstream.Start(context.Background(), g.Registry, []mcpupstream.Server{stdio(t, "std", dir, nil, tc.env)},
				&mcpupstream.Options{StopTimeout: 300 * time.Millisecond})
			require.NoError(t, err)
			server, child := pidIn(t, dir, "server.pid"), pidIn(t, dir, "child.pid")
			require.True(t, alive(server) && alive(child))
			began := time.Now()
			require.NoError(t, u.Close())
			require.Less(t, time.Since(began), 5*time.Second)
			eventually(t, "the processes to be gone", func() bool { return !alive(server) && !alive(child) })
			_, err = g.Registry.Lookup("std.echo")
			require.ErrorIs(t, err, registry.ErrNotFound, "its tools leave with it")
		})
	}
}

func TestAServerIsStartedAgainWhenItExits(t *testing.T) {
	t.Parallel()
	g := gateway(t, nil)
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	u := start(t, g.Registry, &mcpupstream.Options{Metrics: reg}, stdio(t, "std", dir, nil, nil))
	require.Equal(t, 1.0, testutil.ToFloat64(gaugeOf(t, reg)))
	first := pidIn(t, dir, "server.pid")
	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	eventually(t, "a new process", func() bool {
		raw, _ := os.ReadFile(filepath.Join(dir, "server.pid"))
		return strings.TrimSpace(string(raw)) != strconv.Itoa(first) && u.Health()["std"] == "up"
	})
	require.Equal(t, 1.0, testutil.ToFloat64(gaugeOf(t, reg)))
	res, err := call(t, g, "std.echo", `{"text":"again"}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
}

// gaugeOf is toolgate_mcp_server_up{server="std"} in reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry) prometheus.Collector {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "toolgate_mcp_server_up" {
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == "std" {
					return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x"}, func() float64 { return m.GetGauge().GetValue() })
				}
			}
		}
	}
	t.Fatal("no toolgate_mcp_server_up{server=\"std\"}")
	return nil
}

func TestAServerThatCannotStartLeavesTheOthersServing(t *testing.T) {
	t.Parallel()
	g := gateway(t, nil)
	var log testLog
	began := time.Now()
	u := start(t, g.Registry, &mcpupstream.Options{Logger: log.logger(), StartTimeout: 500 * time.Millisecond},
		mcpupstream.Server{ID: "missing", Command: []string{filepath.Join(t.TempDir(), "no-such-server")}},
		mcpupstream.Server{ID: "mute", Command: []string{"sleep", "60"}},
		mcpupstream.Server{ID: "up", Transport: inProcess(t, newUpstream().MCP)},
	)
	require.Less(t, time.Since(began), 5*time.Second)
	require.Equal(t, map[string]string{"missing": "down", "mute": "down", "up": "up"}, u.Health())
	// Start returns once every server is up or given up on; a status
	// says why a little after, when its attempt has ended.
	var st []mcpupstream.Status
	require.Eventually(t, func() bool {
		st = u.Status()
		return strings.Contains(st[0].Error, "cannot start or reach it") && strings.Contains(st[1].Error, "did not start within 500ms")
	}, 5*time.Second, 10*time.Millisecond, "%+v", st)
	_, err := g.Registry.Lookup("up.echo")
	require.NoError(t, err)
	vs, _ := g.Registry.List("", 100, 0)
	for _, v := range vs {
		require.True(t, strings.HasPrefix(v.Tool.Slug, "up."), v.Tool.Slug)
	}
	require.Contains(t, log.String(), "MCP server is down")
}

func TestUpstreamLogMessagesReachTheGatewayLog(t *testing.T) {
	t.Parallel()
	var log testLog
	g := gateway(t, nil)
	start(t, g.Registry, &mcpupstream.Options{Logger: log.logger()}, stdio(t, "std", t.TempDir(), nil, nil))
	res, err := call(t, g, "std.log", `{}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	eventually(t, "the log line", func() bool { return strings.Contains(log.String(), "a log message from upstreamtest") })
	require.Contains(t, log.String(), `"mcpServer":"std"`)
}
