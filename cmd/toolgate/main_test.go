package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/toolgate/toolgate/internal/testproc"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func noEnv(string) string { return "" }

// TestRunRefusesBadUsage: mistakes on the command line exit 2 with a
// message, before anything listens.
func TestRunRefusesBadUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "flag provided but not defined: -nope"},
		{"stray argument", []string{"serve"}, `toolgate: unexpected argument "serve" (see -h)`},
		{"bad -listen", []string{"-listen", "8080"}, `toolgate: -listen: "8080" is not a host:port address`},
		{"missing config file", []string{"-config", "/nonexistent/toolgate.json"},
			"toolgate: /nonexistent/toolgate.json: config: cannot read the config file: open /nonexistent/toolgate.json: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, noEnv, &stdout, &stderr)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr.String(), tt.want)
			assert.Empty(t, stdout.String())
		})
	}
}

func TestRunHelp(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, noEnv, &stdout, &stderr))
	for _, flag := range []string{"-config", "-offline", "-listen"} {
		assert.Contains(t, stderr.String(), flag)
	}
}

// TestRunCannotListen: an address in use is a failure to start (exit 1),
// logged as JSON.
func TestRunCannotListen(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()

	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-offline", "-listen", taken.Addr().String()}, noEnv, &stdout, &stderr)
	assert.Equal(t, 1, code)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(stderr.Bytes(), &rec), "%s", stderr.String())
	assert.Equal(t, "cannot listen", rec["msg"])
	assert.Empty(t, stdout.String(), "no development key is printed for a server that is not running")
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
