package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rulesConfig is a config with principals alice and bob, approver leads,
// and rules.
func rulesConfig(t *testing.T, rules any) string {
	t.Helper()
	return writeConfig(t, map[string]any{
		"listen": "127.0.0.1:0",
		"principals": []any{
			map[string]any{"id": "alice", "apiKeys": []string{randomKey(t, "tg_test_alice_")}},
			map[string]any{"id": "bob", "apiKeys": []string{randomKey(t, "tg_test_bob_")}},
		},
		"approvers": []any{map[string]any{"id": "leads", "keys": []string{randomKey(t, "tg_test_leads_")}, "principals": []string{"alice", "bob"}}},
		"rules":     rules,
	})
}

// orgRules are the contract's kinds of rule on the built-in tools: a deny
// on an argument, an ask over a price for leads, a hide by group, and an
// audit rule that changes nothing.
var orgRules = []any{
	map[string]any{"name": "fr-is-for-sre", "effect": "deny", "message": "French holidays are for the SRE team",
		"when": "tool.slug == 'public-holidays' && has(input.countryCode) && input.countryCode == 'FR' && !('sre' in principal.groups)"},
	map[string]any{"name": "big-calls-need-a-lead", "when": "call.totalUsd > 0.05", "effect": "ask", "approvers": []string{"leads"}},
	map[string]any{"name": "support-sees-support-tools", "when": "'support' in principal.groups && !(tool.slug in ['exchange-rates'])", "effect": "hide"},
	map[string]any{"name": "watch-weather", "when": "tool.slug == 'current-weather'", "effect": "deny", "mode": "audit"},
}

// writeCases writes a cases file beside the test's other files.
func writeCases(t *testing.T, cases string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cases.json")
	require.NoError(t, os.WriteFile(path, []byte(cases), 0o600))
	return path
}

func TestRulesTestBinary(t *testing.T) {
	t.Parallel()
	cfg := rulesConfig(t, orgRules)
	holding := `[
  {"principal": {"id": "alice", "groups": ["eng"]}, "tool": "public-holidays", "input": {"countryCode": "FR", "year": 2026}, "expect": "deny"},
  {"principal": {"id": "alice", "groups": ["sre"]}, "tool": "public-holidays", "input": {"countryCode": "FR", "year": 2026}, "expect": "allow"},
  {"principal": {"id": "bob"}, "tool": "goal-data", "expect": "ask"},
  {"principal": {"id": "carol", "claims": {"groups": ["support"]}}, "tool": "current-weather", "expect": "hide"},
  {"principal": {"id": "bob"}, "tool": "current-weather", "expect": "allow"},
  {"principal": {"id": "carol", "groups": ["support"]}, "tool": "exchange-rates"}
]`
	code, out := runCLI(t, nil, "rules", "test", "-config", cfg, writeCases(t, holding))
	assert.Equal(t, exitOK, code, out)
	assert.Equal(t, `[0] public-holidays by alice: deny; rules: fr-is-for-sre; PASS
[1] public-holidays by alice: allow; PASS
[2] goal-data by bob: ask (approvers: leads); rules: big-calls-need-a-lead; PASS
[3] current-weather by carol: hide; rules: support-sees-support-tools; PASS
[4] current-weather by bob: allow; rules: watch-weather (audit); PASS
[5] exchange-rates by carol: allow
PASS: 5/5
`, out)

	failing := `[
  {"principal": {"id": "alice"}, "tool": "public-holidays", "input": {"countryCode": "DE", "year": 2026}, "expect": "allow"},
  {"principal": {"id": "alice"}, "tool": "public-holidays", "input": {"countryCode": "FR", "year": 2026}, "expect": "allow"}
]`
	code, out = runCLI(t, nil, "rules", "test", "-config", cfg, writeCases(t, failing))
	assert.Equal(t, exitFailed, code, out)
	assert.Equal(t, `[0] public-holidays by alice: allow; PASS
[1] public-holidays by alice: deny; rules: fr-is-for-sre; FAIL: expected allow
FAIL: 1/2
`, out)
}

// A mistake in the cases or the config is exit 2 and one line naming it.
func TestRulesTestBinaryMistakes(t *testing.T) {
	t.Parallel()
	cfg := rulesConfig(t, orgRules)
	for _, tc := range []struct {
		name, cases, want string
	}{
		{"unknown tool", `[{"principal": {"id": "alice"}, "tool": "goal-data"}, {"principal": {"id": "alice"}, "tool": "public-holiday"}]`,
			`[1].tool: no tool "public-holiday" is registered: did you mean "public-holidays"?`},
		{"bad expect", `[{"principal": {"id": "alice"}, "tool": "goal-data", "expect": "denied"}]`,
			`[0].expect: "denied" is not an outcome: use "allow", "deny", "ask" or "hide"`},
		{"no principal", `[{"tool": "goal-data"}]`, `[0].principal.id: is required: the id of the caller`},
		{"unknown field", `[{"principal": {"id": "alice"}, "tool": "goal-data", "expected": "ask"}]`, `[0]: unknown field "expected": did you mean "expect"?`},
		{"input against the schema", `[{"principal": {"id": "alice"}, "tool": "public-holidays", "input": {"countryCode": 7, "year": 2026}}]`,
			`[0].input: does not match the tool's input schema: input.countryCode: `},
		{"not an array", `{"principal": {"id": "alice"}}`, `must be an array of cases, not an object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cases := writeCases(t, tc.cases)
			code, out := runCLI(t, nil, "rules", "test", "-config", cfg, cases)
			assert.Equal(t, exitUsage, code, out)
			prefix := "toolgate: " + cases + ": " + tc.want
			assert.True(t, strings.HasPrefix(out, prefix), "%q starts with %q", out, prefix)
			assert.Equal(t, 1, strings.Count(out, "\n"), "one line and nothing decided: %q", out)
		})
	}

	bad := rulesConfig(t, []any{map[string]any{"name": "fr-is-for-sre", "when": "inpt.countryCode == 'FR'", "effect": "deny"}})
	code, out := runCLI(t, nil, "rules", "test", "-config", bad, writeCases(t, `[]`))
	assert.Equal(t, exitUsage, code, out)
	assert.Equal(t, "toolgate: "+bad+": config: rules[0].when: rule fr-is-for-sre: column 1: undeclared reference to 'inpt' (did you mean 'int' or 'input'?)\n", out)
}

// The server refuses to start with a rule that cannot work: exit 2, one
// line naming the rule's field, the rule and, in its when, the column.
func TestRulesBadRuleRefusesStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		rules string
		// want follows "config: " in the line.
		want string
	}{
		{"syntax", `[{"name": "broken", "when": "tool.slug == ", "effect": "deny"}]`,
			"rules[0].when: rule broken: column 14: Syntax error: "},
		{"unknown variable", `[{"name": "ok", "when": "true", "effect": "deny", "mode": "audit"}, {"name": "prod-is-for-sre", "when": "tool.slug == 'x' && inpt.path == '/'", "effect": "deny"}]`,
			"rules[1].when: rule prod-is-for-sre: column 21: undeclared reference to 'inpt'"},
		{"unknown field", `[{"name": "groups", "when": "'sre' in principal.grups", "effect": "deny"}]`,
			"rules[0].when: rule groups: column 19: undefined field 'grups'"},
		{"non-boolean", `[{"name": "a-number", "when": "call.totalUsd * 2.0", "effect": "deny"}]`,
			"rules[0].when: rule a-number: column 1: the expression is of type double: a rule's when must be a bool"},
		{"hide reading input", `[{"name": "hide-by-input", "when": "input.path == '/'", "effect": "hide"}]`,
			"rules[0].when: rule hide-by-input: column 1: a hide rule may read principal and tool only, not input"},
		{"duplicate name", `[{"name": "twice", "when": "true", "effect": "deny"}, {"name": "twice", "when": "false", "effect": "ask"}]`,
			"rules[1].name: rule twice: another rule has this name: names must be unique"},
		{"cost over the limit", `[{"name": "expensive", "effect": "deny", "when": "principal.groups.exists(a, principal.groups.exists(b, principal.groups.exists(c, a + b + c == 'x')))"}]`,
			"rules[0].when: rule expensive: column 1: its estimated cost, up to "},
		{"unknown approver", `[{"name": "needs-a-lead", "when": "true", "effect": "ask", "approvers": ["leads", "cfo"]}]`,
			`rules[0].approvers[1]: rule needs-a-lead: no approver "cfo" is configured`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rules any
			require.NoError(t, json.Unmarshal([]byte(tc.rules), &rules))
			path := rulesConfig(t, rules)
			srv := startProcess(t, []string{"-offline", "-config", path})
			assert.Equal(t, exitUsage, srv.wait(exitTimeout), "stderr: %s", srv.stderr.String())
			stderr := srv.stderr.String()
			prefix := "toolgate: " + path + ": config: " + tc.want
			assert.True(t, strings.HasPrefix(stderr, prefix), "stderr %q starts with %q", stderr, prefix)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			assert.Empty(t, srv.stdout.String(), "it never listened")
		})
	}
}
