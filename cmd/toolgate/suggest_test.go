package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMistypedCommandSuggestsTheNearest: a command or subcommand off by a
// key or two gets the one meant, with exit 2; a word near none gets no
// guess.
func TestMistypedCommandSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serv"}, `toolgate: unknown command "serv": did you mean "serve"? (see toolgate help)` + "\n"},
		{[]string{"verison"}, `toolgate: unknown command "verison": did you mean "version"? (see toolgate help)` + "\n"},
		{[]string{"tool", "check", "x.json"}, `toolgate: unknown command "tool": did you mean "tools"? (see toolgate help)` + "\n"},
		{[]string{"mcp", "pn"}, `toolgate: unknown command "mcp pn": did you mean "mcp pin"? (see toolgate help mcp)` + "\n"},
		{[]string{"tools", "chek", "x.json"}, `toolgate: unknown command "tools chek": did you mean "tools check"? (see toolgate help tools)` + "\n"},
		{[]string{"frobnicate"}, `toolgate: unknown command "frobnicate" (see toolgate help)` + "\n"},
		{[]string{"tools", "lint"}, `toolgate: unknown command "tools lint" (see toolgate help tools)` + "\n"},
		{[]string{"mcp", "now"}, "toolgate mcp: unexpected argument \"now\" (see toolgate help mcp)\n"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, exitUsage, run(context.Background(), tt.args, noEnv, &stdout, &stderr), "%v", tt.args)
		assert.Equal(t, tt.want, stderr.String(), "%v", tt.args)
		assert.Empty(t, stdout.String(), "%v", tt.args)
	}
}
