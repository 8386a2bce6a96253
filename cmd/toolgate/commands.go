package main

import (
	"context"
	"io"
	"os"

	"github.com/toolgate/toolgate/internal/cli"
)

// Exit codes.
const (
	exitOK     = cli.ExitOK
	exitFailed = cli.ExitFailed
	exitUsage  = cli.ExitUsage
)

// commands are toolgate's commands, in the order help lists them. A new
// command is one more line.
var commands = []*cli.Command{
	serveCommand,
	mcpCommand,
	mcpPinCommand,
	toolsCheckCommand,
	configCheckCommand,
	rulesTestCommand,
	receiptsExportCommand,
	receiptsVerifyCommand,
	eventsListCommand,
	eventsRetryCommand,
	helpCommand,
	versionCommand,
}

// helpCommand is "toolgate help [COMMAND]".
var helpCommand = cli.Help("show toolgate's help, or a command's")

// intro opens toolgate's help.
const intro = `toolgate gates agents' tool calls: quotes, policy, approvals by people,
spend controls, and calls that run exactly once.

Usage:
  toolgate [serve] [flags]      run the server (the default command)
  toolgate COMMAND [arguments]

`

// run is the whole program; ctx is done when it should stop. It returns
// the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := &cli.CLI{Name: "toolgate", Intro: intro, Commands: commands, Default: serveCommand, Version: versionCommand,
		Getenv: getenv, Stdin: os.Stdin, Stdout: stdout, Stderr: stderr}
	return c.Run(ctx, args)
}
