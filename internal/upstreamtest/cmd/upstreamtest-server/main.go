// Command upstreamtest-server is upstreamtest's MCP server over stdio, for
// tests that start it as a child process.
//
// UPSTREAMTEST_STATE names the directory its counts are kept in, and its
// pid (server.pid). With
// UPSTREAMTEST_CHILD set, it starts a child process of its own ("sleep")
// and writes its pid to child.pid there, as servers started by npx do; with
// UPSTREAMTEST_IGNORE_TERM set, it ignores SIGTERM.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/upstreamtest"
)

func main() {
	dir := os.Getenv("UPSTREAMTEST_STATE")
	if dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "server.pid"), []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	if os.Getenv("UPSTREAMTEST_IGNORE_TERM") != "" {
		signal.Ignore(syscall.SIGTERM)
	}
	if os.Getenv("UPSTREAMTEST_CHILD") != "" && dir != "" {
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "cannot start the child:", err)
			os.Exit(1)
		}
		_ = os.WriteFile(filepath.Join(dir, "child.pid"), []byte(strconv.Itoa(child.Process.Pid)), 0o600)
	}
	fmt.Fprintln(os.Stderr, "upstreamtest-server started")
	srv := upstreamtest.New(&upstreamtest.Options{StateDir: dir})
	if err := srv.MCP.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "upstreamtest-server:", err)
		os.Exit(1)
	}
}
