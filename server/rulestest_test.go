package server

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a rule sees of a case comes from the config as the gateway's
// would: budgets by members, claims and everyone with their ancestors,
// the approval mode of the principal's entry, the call's fee at the
// config's rate.
func TestRunRuleCasesPrincipalAndCost(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{
  "feeRate": "0.2",
  "principals": [{"id": "alice", "apiKeys": ["tg_alice"], "approvalMode": "approver"}, {"id": "bob", "apiKeys": ["tg_bob"]}],
  "approvers": [{"id": "pat", "keys": ["tg_pat"], "principals": ["alice"]}],
  "oauth": {"issuer": "https://idp.example.com", "audience": "https://gateway.example.com/mcp"},
  "budgets": [
    {"id": "acme", "monthlyLimitUsd": "1000"},
    {"id": "search", "parent": "acme", "members": ["alice"], "dailyLimitUsd": "5"},
    {"id": "ops", "parent": "acme", "claims": {"groups": "ops"}, "dailyLimitUsd": "5"}
  ],
  "rules": [
    {"name": "acme-budgets", "when": "'acme' in principal.budgets", "effect": "deny", "mode": "audit"},
    {"name": "ops-budget", "when": "principal.budgets == ['ops', 'acme']", "effect": "deny", "mode": "audit"},
    {"name": "approver-mode", "when": "principal.approvalMode == 'approver'", "effect": "ask", "mode": "audit"},
    {"name": "fee-at-the-rate", "when": "call.priceUsd == 0.1 && call.feeUsd == 0.02 && call.totalUsd == 0.12", "effect": "ask", "mode": "audit"},
    {"name": "high-risk", "when": "tool.risk == 'critical' || tool.risk == 'high' || tool.risk == 'medium' || tool.risk == 'low'", "effect": "ask", "mode": "audit"}
  ]
}`))
	require.NoError(t, err)
	var out strings.Builder
	passed, err := RunRuleCases(cfg, []byte(`[
  {"principal": {"id": "alice"}, "tool": "goal-data", "expect": "allow"},
  {"principal": {"id": "bob"}, "tool": "goal-data"},
  {"principal": {"id": "carol", "groups": ["ops"]}, "tool": "goal-data"},
  {"principal": {"id": "dan", "claims": {"groups": ["ops", "x"]}}, "tool": "goal-data"}
]`), &out)
	require.NoError(t, err)
	assert.True(t, passed)
	assert.Equal(t, `[0] goal-data by alice: allow; rules: acme-budgets (audit), approver-mode (audit), fee-at-the-rate (audit), high-risk (audit); PASS
[1] goal-data by bob: allow; rules: fee-at-the-rate (audit), high-risk (audit)
[2] goal-data by carol: allow; rules: acme-budgets (audit), ops-budget (audit), fee-at-the-rate (audit), high-risk (audit)
[3] goal-data by dan: allow; rules: acme-budgets (audit), ops-budget (audit), fee-at-the-rate (audit), high-risk (audit)
PASS: 1/1
`, out.String())
}

// A rule that fails while running fails closed, and says why; a case of an
// MCP server's tool is skipped, since its tools are known once it runs.
func TestRunRuleCasesErrorsAndSkips(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{
  "mcpServers": [{"id": "files", "command": ["files-server"]}],
  "rules": [{"name": "careless", "when": "input.path.startsWith('/prod/')", "effect": "deny"}]
}`))
	require.NoError(t, err)
	var out strings.Builder
	passed, err := RunRuleCases(cfg, []byte(`[
  {"principal": {"id": "alice"}, "tool": "exchange-rates", "input": {"base": "EUR", "quotes": "USD"}, "expect": "allow"},
  {"principal": {"id": "alice"}, "tool": "files.write_file", "expect": "allow"}
]`), &out)
	require.NoError(t, err)
	assert.False(t, passed)
	assert.Equal(t, `[0] exchange-rates by alice: deny; rules: careless (failed: no such key: path); FAIL: expected allow
[1] files.write_file: skipped: the tools of MCP servers are known only once the servers run (toolgate serve)
FAIL: 1/1 (1 skipped)
`, out.String())
}

// A mistake in the cases is an error naming the case and field, and
// nothing is decided.
func TestRunRuleCasesMistakes(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{}`))
	require.NoError(t, err)
	for _, tc := range []struct{ name, cases, err string }{
		{"not JSON", `[{]`, "invalid JSON at line 1, column 3: invalid character ']' looking for beginning of object key string"},
		{"not an array", `{}`, "must be an array of cases, not an object"},
		{"unknown tool", `[{"principal": {"id": "a"}, "tool": "goal-dta"}]`, `[0].tool: no tool "goal-dta" is registered: did you mean "goal-data"?`},
		{"no tool", `[{"principal": {"id": "a"}}]`, `[0].tool: is required: the slug of the tool called`},
		{"no principal", `[{"tool": "goal-data"}]`, `[0].principal.id: is required: the id of the caller`},
		{"groups not strings", `[{"principal": {"id": "a", "groups": [1]}, "tool": "goal-data"}]`, `[0].principal.groups[0]: must be a string, not a number`},
		{"input not an object", `[{"principal": {"id": "a"}, "tool": "goal-data", "input": [1]}]`, `[0].input: must be an object, not an array`},
		{"bad expect", `[{"principal": {"id": "a"}, "tool": "goal-data", "expect": "hidden"}]`, `[0].expect: "hidden" is not an outcome: use "allow", "deny", "ask" or "hide"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			_, err := RunRuleCases(cfg, []byte(tc.cases), &out)
			require.Error(t, err)
			assert.IsType(t, &RuleCaseError{}, err)
			assert.EqualError(t, err, tc.err)
			assert.Empty(t, out.String())
		})
	}
}

// TestREADMERulesExample keeps the README's rules section true: its config
// parses, and its cases give the output it shows.
func TestREADMERulesExample(t *testing.T) {
	t.Parallel()
	const heading = "Rules the organization writes"
	cfg, err := ParseConfig(readmeConfigExample(t, heading))
	require.NoError(t, err)
	require.Len(t, cfg.Rules, 4)

	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, _ := strings.Cut(string(readme), "\n## "+heading+"\n")
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := strings.Split(section, "```json\n")
	require.Len(t, blocks, 3, "a config, then cases")
	cases, _, _ := strings.Cut(blocks[2], "```")
	_, shown, found := strings.Cut(section, "$ toolgate rules test -config toolgate.json rules-cases.json\n")
	require.True(t, found, "the section shows a run")
	shown, _, _ = strings.Cut(shown, "```")

	var out strings.Builder
	passed, err := RunRuleCases(cfg, []byte(cases), &out)
	require.NoError(t, err)
	assert.False(t, passed, "the example shows a failing case")
	assert.Equal(t, shown, out.String())
}

// A case may say when it is decided, for rules that read the time; a time
// that is no RFC 3339 one is a mistake naming the case.
func TestRunRuleCasesAtATime(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{"rules": [{"name": "no-weather-at-night", "effect": "deny",
  "when": "tool.slug == 'current-weather' && (now.getHours('Europe/Paris') >= 22 || now.getHours('Europe/Paris') < 6)"}]}`))
	require.NoError(t, err)
	var out strings.Builder
	passed, err := RunRuleCases(cfg, []byte(`[
  {"principal": {"id": "alice"}, "tool": "current-weather", "now": "2026-12-06T23:30:00+01:00", "expect": "deny"},
  {"principal": {"id": "alice"}, "tool": "current-weather", "now": "2026-12-06T12:00:00Z", "expect": "allow"}
]`), &out)
	require.NoError(t, err)
	assert.True(t, passed, out.String())
	assert.Equal(t, `[0] current-weather by alice: deny; rules: no-weather-at-night; PASS
[1] current-weather by alice: allow; PASS
PASS: 2/2
`, out.String())

	_, err = RunRuleCases(cfg, []byte(`[{"principal": {"id": "alice"}, "tool": "current-weather", "now": "tonight"}]`), &out)
	require.EqualError(t, err, "[0].now: must be a time in RFC 3339, such as 2026-12-06T23:30:00+01:00")
}
