package rules_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/rules"
)

// contractRules are contract section 29's four example rules, the last's
// when written out.
var contractRules = []rules.Rule{
	{Name: "prod-is-for-sre", When: "tool.slug.startsWith('fs.') && input.path.startsWith('/prod/') && !('sre' in principal.groups)",
		Effect: rules.Deny, Message: "writes under /prod are for the SRE team"},
	{Name: "big-calls-need-a-lead", When: "call.totalUsd > 5.0", Effect: rules.Ask, Approvers: []string{"leads"}},
	{Name: "support-sees-support-tools", When: "'support' in principal.groups && !(tool.slug in ['ticket-reply', 'kb-search'])", Effect: rules.Hide},
	{Name: "try-weather-limit", When: "tool.slug == 'current-weather' && now.getHours('Europe/Paris') >= 22", Effect: rules.Deny, Mode: rules.Audit},
}

func TestCompileContractExamples(t *testing.T) {
	t.Parallel()
	set, err := rules.Compile(contractRules)
	require.NoError(t, err)
	assert.Equal(t, 4, set.Len())
	assert.True(t, set.ReadsInput())
	assert.True(t, set.Hides())
	assert.Equal(t, rules.Enforce, set.Rules()[0].Mode, "the default mode")
}

// Every rule that cannot work is refused with the rule's name, the field
// and, for a fault in when, its column.
func TestCompileRefusals(t *testing.T) {
	t.Parallel()
	ok := rules.Rule{Name: "first", When: "true", Effect: rules.Deny}
	for _, tc := range []struct {
		name  string
		rule  rules.Rule
		field string
		// index is the refused rule's; err is Error() exactly, or, with
		// prefix, how it starts.
		err    string
		prefix bool
	}{
		{"syntax error", rules.Rule{Name: "bad-syntax", When: "tool.slug == ", Effect: rules.Deny}, "when",
			"rule bad-syntax: when: column 14: Syntax error: mismatched input", true},
		{"unknown variable", rules.Rule{Name: "prod-is-for-sre", When: "inpt.path == '/prod'", Effect: rules.Deny}, "when",
			"rule prod-is-for-sre: when: column 1: undeclared reference to 'inpt'", true},
		{"unknown field", rules.Rule{Name: "groups", When: "'sre' in principal.grups", Effect: rules.Deny}, "when",
			"rule groups: when: column 19: undefined field 'grups'", false},
		{"unknown field on a later line", rules.Rule{Name: "two-lines", When: "true &&\n  tool.slg == 'x'", Effect: rules.Deny}, "when",
			"rule two-lines: when: line 2: column 7: undefined field 'slg'", false},
		{"non-bool result", rules.Rule{Name: "a-string", When: "tool.slug", Effect: rules.Deny}, "when",
			"rule a-string: when: column 1: the expression is of type string: a rule's when must be a bool", false},
		{"hide reading input", rules.Rule{Name: "hide-by-input", When: "tool.slug == 'x' && input.path == '/'", Effect: rules.Hide}, "when",
			"rule hide-by-input: when: column 21: a hide rule may read principal and tool only, not input: a tool is hidden before any call of it is known", false},
		{"hide reading the cost", rules.Rule{Name: "hide-by-cost", When: "call.totalUsd > 1.0", Effect: rules.Hide}, "when",
			"rule hide-by-cost: when: column 1: a hide rule may read principal and tool only, not call", true},
		{"duplicate name", rules.Rule{Name: "first", When: "false", Effect: rules.Ask}, "name",
			"rule first: name: another rule has this name: names must be unique", false},
		{"bad name", rules.Rule{Name: "Prod_Rule", When: "true", Effect: rules.Deny}, "name",
			`rule #2: name: "Prod_Rule" is not a rule name`, true},
		{"bad effect", rules.Rule{Name: "blocker", When: "true", Effect: "block"}, "effect",
			`rule blocker: effect: "block" is not an effect: use "deny", "ask" or "hide"`, false},
		{"bad mode", rules.Rule{Name: "dry", When: "true", Effect: rules.Deny, Mode: "dry-run"}, "mode",
			`rule dry: mode: "dry-run" is not a mode: use "enforce" or "audit"`, false},
		{"approvers on a deny", rules.Rule{Name: "deny-with-approvers", When: "true", Effect: rules.Deny, Approvers: []string{"leads"}}, "approvers",
			"rule deny-with-approvers: approvers: only an ask rule names approvers", false},
		{"no when", rules.Rule{Name: "empty", When: " ", Effect: rules.Deny}, "when",
			"rule empty: when: is required", true},
		{"cost over the limit", rules.Rule{Name: "expensive",
			When:   "principal.groups.exists(a, principal.groups.exists(b, principal.groups.exists(c, a + b + c == 'x')))",
			Effect: rules.Deny}, "when",
			"rule expensive: when: column 1: its estimated cost, up to ", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := rules.Compile([]rules.Rule{ok, tc.rule})
			require.Error(t, err)
			var re *rules.Error
			require.True(t, errors.As(err, &re), "a *rules.Error: %v", err)
			assert.Equal(t, 1, re.Index)
			assert.Equal(t, tc.field, re.Field)
			if tc.prefix {
				assert.True(t, strings.HasPrefix(err.Error(), tc.err), "%q starts with %q", err, tc.err)
			} else {
				assert.Equal(t, tc.err, err.Error())
			}
		})
	}
}

// A cost refusal says the limit, and a rule under it compiles: one loop
// over the groups is affordable.
func TestCompileCost(t *testing.T) {
	t.Parallel()
	_, err := rules.Compile([]rules.Rule{{Name: "expensive", Effect: rules.Deny,
		When: "principal.groups.exists(a, principal.groups.exists(b, principal.groups.exists(c, a + b + c == 'x')))"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "passes the limit of 1000000")

	_, err = rules.Compile([]rules.Rule{{Name: "cheap", Effect: rules.Deny, When: "principal.groups.exists(g, g.startsWith('sre-'))"}})
	assert.NoError(t, err)
}
