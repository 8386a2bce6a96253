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

// TestMistypedConfigFieldSuggestsTheNearest: an unknown field near a field
// of its object, at the top or nested, gets that field suggested.
func TestMistypedConfigFieldSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		doc  string
		want string
	}{
		{`{"listn": "127.0.0.1:8080"}`, `config: unknown field "listn": did you mean "listen"?`},
		{`{"builtinTool": false}`, `config: unknown field "builtinTool": did you mean "builtinTools"?`},
		{`{"principals": [{"id": "a", "apiKey": ["tg_test_a_0123456789"]}]}`, `config: principals[0]: unknown field "apiKey": did you mean "apiKeys"?`},
		{`{"mcpServers": [{"id": "a", "comand": ["srv"]}]}`, `config: mcpServers[0]: unknown field "comand": did you mean "command"?`},
		{`{"budgets": [{"id": "team", "dailyLimtUsd": "1.0000"}]}`, `config: budgets[0]: unknown field "dailyLimtUsd": did you mean "dailyLimitUsd"?`},
		{`{"colour": "blue"}`, `config: unknown field "colour"`},
	}
	for _, tt := range tests {
		_, err := parseConfig([]byte(tt.doc), testRegistry(t))
		if assert.Error(t, err, tt.doc) {
			assert.Equal(t, tt.want, err.Error(), tt.doc)
		}
	}
}

func TestNearest(t *testing.T) {
	t.Parallel()
	names := []string{"serve", "mcp", "tools", "help", "version"}
	for word, want := range map[string]string{
		"serv": "serve", "srve": "serve", "mpc": "mcp", "hlep": "help", "v": "", "x": "", "receipts": "", "": "",
	} {
		assert.Equal(t, want, nearest(word, names), word)
	}
}
