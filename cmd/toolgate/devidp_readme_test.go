package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEIdentityWalkThrough runs the README's identity section as a
// reader would: the development identity provider started with the
// section's users file and command, the server with its config, ann's
// call made with the token the provider printed, and ci-bot's token got
// by the client credentials grant, whose quote shows ann's call counted
// in the search team's budget. Only the ports are the test's, so that
// tests run side by side.
func TestREADMEIdentityWalkThrough(t *testing.T) {
	t.Parallel()
	requireShellTools(t)
	toolgateBinary(t)                 // skips where the end-to-end tests do
	untilPastMidnight(t, time.Minute) // the team's window is a day
	section := readmeSection(t, "People and callers from your identity provider")
	files := jsonBlocks(section)
	require.GreaterOrEqual(t, len(files), 2, "the users file, the server's config")
	blocks := shellBlocks(section)
	require.GreaterOrEqual(t, len(blocks), 4, "the provider, the server, ann's call, ci-bot's quote")

	// The server's address, chosen first: the users file names it as
	// the audience of the provider's tokens.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users.json"), []byte(strings.ReplaceAll(files[0], "127.0.0.1:8080", addr)), 0o600))

	start := strings.Fields(blocks[0])
	require.Equal(t, []string{"go", "run", "./cmd/toolgate-dev-idp"}, start[:3], "the README runs the clone's provider")
	bin, _ := devIdp.Build(t, "../toolgate-dev-idp", raceEnabled)
	idp := startBinaryIn(t, bin, dir, append(start[3:], "-listen", "127.0.0.1:0"))
	issuer := strings.TrimPrefix(idp.waitLine("toolgate-dev-idp issuer ", 30*time.Second), "toolgate-dev-idp issuer ")
	var tokens []string
	for _, name := range []string{"ANN_TOKEN", "LEE_TOKEN", "CI_BOT_TOKEN"} {
		line := idp.waitLine("export "+name+"=", 10*time.Second)
		tokens = append(tokens, strings.TrimPrefix(line, "export "))
	}
	assert.Contains(t, idp.stdout.String(), "# access tokens for http://"+addr+"/mcp")

	// The server, as the README starts it, with its config in the same
	// directory.
	here := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "127.0.0.1:8080", addr), "http://127.0.0.1:8090", issuer)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "toolgate.json"), []byte(here(files[1])), 0o600))
	serve := strings.Fields(blocks[1])
	require.Equal(t, "toolgate", serve[0])
	srv := startProcessIn(t, dir, serve[1:])
	require.Equal(t, "http://"+addr, strings.TrimPrefix(srv.waitLine("toolgate listening on ", 60*time.Second), "toolgate listening on "))

	// ann's call, with her printed token.
	out := runScript(t, here(blocks[2]), tokens...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, "the quote, the call: %s", out)
	var quote, call map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &quote), "%s", out)
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &call), "%s", out)
	assert.Equal(t, "completed", call["status"], "%s", out)
	assert.Equal(t, "0.1100", call["cost"].(map[string]any)["totalUsd"], "%s", out)
	assert.Equal(t, "search-team", teamBudget(t, quote)["id"], "ann's quote shows her team's budget: %s", lines[0])

	// ci-bot's token, by the client credentials grant, and its quote:
	// the team's day holds ann's call.
	out = runScript(t, here(blocks[3]))
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &quote), "%s", out)
	team := teamBudget(t, quote)
	assert.Equal(t, "search-team", team["id"])
	daily := team["windows"].(map[string]any)["daily"].(map[string]any)
	assert.Equal(t, []any{"1.0000", "0.1100", "0.8900"}, []any{daily["limitUsd"], daily["usedUsd"], daily["remainingUsd"]},
		"ann's call counts in the team's day, as the README says: %s", out)
	for _, shown := range []string{`"usedUsd":"0.1100"`, `"remainingUsd":"0.8900"`} {
		assert.Contains(t, out, shown)
		assert.Contains(t, section, shown, "the README quotes what the quote shows")
	}

	assert.Equal(t, 0, srv.stop(exitTimeout))
	assert.Equal(t, 0, idp.stop(exitTimeout), "the provider stops on SIGTERM")
	for _, tok := range tokens {
		assert.NotContains(t, srv.stderr.String(), strings.SplitN(tok, "=", 2)[1], "no token in the server's log")
	}
}

// teamBudget is the first budget of a quote's controls.
func teamBudget(t *testing.T, quote map[string]any) map[string]any {
	t.Helper()
	controls, _ := quote["controls"].(map[string]any)
	budgets, _ := controls["budgets"].([]any)
	require.NotEmpty(t, budgets, "the quote lists budgets: %v", quote)
	return budgets[0].(map[string]any)
}

// jsonBlocks returns the JSON code blocks of a README section, in order.
func jsonBlocks(section string) []string {
	var blocks []string
	for _, block := range strings.Split(section, "```json\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		blocks = append(blocks, block)
	}
	return blocks
}
