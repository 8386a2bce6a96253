package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/rules"
)

// rulesConfigJSON is a config with principal alice, approver leads and
// rules given as JSON.
func rulesConfigJSON(rs string) string {
	return `{
  "principals": [{"id": "alice", "apiKeys": ["tg_alice"]}],
  "approvers": [{"id": "leads", "keys": ["tg_leads"], "principals": ["alice"]}],
  "rules": ` + rs + `
}`
}

// The contract's four example rules parse, in order, with what each says.
func TestParseConfigRules(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(rulesConfigJSON(`[
  {"name": "prod-is-for-sre", "when": "tool.slug.startsWith('fs.') && input.path.startsWith('/prod/') && !('sre' in principal.groups)",
   "effect": "deny", "message": "writes under /prod are for the SRE team"},
  {"name": "big-calls-need-a-lead", "when": "call.totalUsd > 5.0", "effect": "ask", "approvers": ["leads"]},
  {"name": "support-sees-support-tools", "when": "'support' in principal.groups && !(tool.slug in ['ticket-reply', 'kb-search'])", "effect": "hide"},
  {"name": "try-weather-limit", "when": "tool.slug == 'current-weather' && now.getHours('Europe/Paris') >= 22", "effect": "deny", "mode": "audit"}
]`)))
	require.NoError(t, err)
	require.Len(t, cfg.Rules, 4)
	assert.Equal(t, rules.Rule{Name: "prod-is-for-sre", Effect: rules.Deny, Message: "writes under /prod are for the SRE team",
		When: "tool.slug.startsWith('fs.') && input.path.startsWith('/prod/') && !('sre' in principal.groups)"}, cfg.Rules[0])
	assert.Equal(t, []string{"leads"}, cfg.Rules[1].Approvers)
	assert.Equal(t, rules.Hide, cfg.Rules[2].Effect)
	assert.Equal(t, rules.Audit, cfg.Rules[3].Mode)

	cfg, err = ParseConfig([]byte(`{}`))
	require.NoError(t, err)
	assert.Nil(t, cfg.Rules, "none")
}

// A rule that cannot work is refused at parse: one line naming the rule's
// field, the rule and, in its when, the column.
func TestParseConfigRuleErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, rules, err string }{
		{"syntax", `[{"name": "broken", "when": "tool.slug == ", "effect": "deny"}]`,
			"config: rules[0].when: rule broken: column 14: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"},
		{"unknown variable", `[{"name": "ok", "when": "true", "effect": "deny"}, {"name": "prod-is-for-sre", "when": "tool.slug == 'x' && inpt.path == '/'", "effect": "deny"}]`,
			"config: rules[1].when: rule prod-is-for-sre: column 21: undeclared reference to 'inpt' (did you mean 'int' or 'input'?)"},
		{"unknown field", `[{"name": "groups", "when": "'sre' in principal.grups", "effect": "deny"}]`,
			"config: rules[0].when: rule groups: column 19: undefined field 'grups'"},
		{"a later line", `[{"name": "two-lines", "when": "true &&\n  tool.slg == 'x'", "effect": "deny"}]`,
			"config: rules[0].when: rule two-lines: line 2, column 7: undefined field 'slg'"},
		{"non-boolean", `[{"name": "a-number", "when": "call.totalUsd * 2.0", "effect": "deny"}]`,
			"config: rules[0].when: rule a-number: column 1: the expression is of type double: a rule's when must be a bool"},
		{"hide reading input", `[{"name": "hide-by-input", "when": "input.path == '/'", "effect": "hide"}]`,
			"config: rules[0].when: rule hide-by-input: column 1: a hide rule may read principal and tool only, not input: a tool is hidden before any call of it is known"},
		{"duplicate name", `[{"name": "twice", "when": "true", "effect": "deny"}, {"name": "twice", "when": "false", "effect": "ask"}]`,
			"config: rules[1].name: rule twice: another rule has this name: names must be unique"},
		{"bad name", `[{"name": "Twice", "when": "true", "effect": "deny"}]`,
			`config: rules[0].name: "Twice" is not a rule name: lower-case letters, digits and '-', starting with a letter or digit, at most 63 characters`},
		{"no name", `[{"when": "true", "effect": "deny"}]`,
			`config: rules[0].name: "" is not a rule name: lower-case letters, digits and '-', starting with a letter or digit, at most 63 characters`},
		{"bad effect", `[{"name": "b", "when": "true", "effect": "block"}]`,
			`config: rules[0].effect: rule b: "block" is not an effect: use "deny", "ask" or "hide"`},
		{"bad mode", `[{"name": "b", "when": "true", "effect": "deny", "mode": "dry-run"}]`,
			`config: rules[0].mode: rule b: "dry-run" is not a mode: use "enforce" or "audit"`},
		{"no when", `[{"name": "b", "effect": "deny"}]`,
			"config: rules[0].when: rule b: is required: the CEL expression that says when the rule matches"},
		{"approvers on a deny", `[{"name": "b", "when": "true", "effect": "deny", "approvers": ["leads"]}]`,
			"config: rules[0].approvers: rule b: only an ask rule names approvers"},
		{"unknown approver", `[{"name": "b", "when": "true", "effect": "ask", "approvers": ["leads", "cfo"]}]`,
			`config: rules[0].approvers[1]: rule b: no approver "cfo" is configured (approvers[].id)`},
		{"cost over the limit", `[{"name": "expensive", "effect": "deny", "when": "principal.groups.exists(a, principal.groups.exists(b, principal.groups.exists(c, a + b + c == 'x')))"}]`,
			"config: rules[0].when: rule expensive: column 1: its estimated cost, up to 508007007003, passes the limit of 1000000 (each list, map or string it reads counted at 1000 elements): loop over less, or nest fewer loops"},
		{"unknown member", `[{"name": "b", "when": "true", "effect": "deny", "mod": "audit"}]`,
			`config: rules[0]: unknown field "mod": did you mean "mode"?`},
		{"when not a string", `[{"name": "b", "when": true, "effect": "deny"}]`,
			`config: rules[0].when: must be a string, not a boolean`},
		{"not an array", `{"name": "b"}`, `config: rules: must be an array, not an object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(rulesConfigJSON(tc.rules)))
			require.Error(t, err)
			assert.IsType(t, &ConfigError{}, err)
			assert.EqualError(t, err, tc.err)
		})
	}
}
