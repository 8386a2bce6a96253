package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budgetsConfig is a config with principals alice and bob, approver pat,
// an identity provider, and budgets given as JSON.
func budgetsConfig(budgets string) string {
	return `{
  "principals": [{"id": "alice", "apiKeys": ["tg_alice"]}, {"id": "bob", "apiKeys": ["tg_bob"]}],
  "approvers": [{"id": "pat", "keys": ["tg_pat"]}],
  "oauth": {"issuer": "https://idp.example.com", "audience": "https://gateway.example.com/mcp"},
  "budgets": ` + budgets + `
}`
}

// teamAndOrganization is contract section 26's example.
const teamAndOrganization = `[
  {"id": "acme", "name": "Acme", "monthlyLimitUsd": "1000.0000"},
  {"id": "search-team", "name": "Search team", "parent": "acme", "members": ["alice", "bob"],
   "claims": {"groups": "search"}, "dailyLimitUsd": "50.0000", "weeklyLimitUsd": "200.0000",
   "rateLimitPerMinute": 600, "tools": {"goal-data": {"allowed": true, "dailyLimitUsd": "5.0000"}},
   "alerts": [0.5, 0.8, 1.0], "timeZone": "Europe/Berlin", "approvers": ["pat"]}
]`

func TestParseConfigBudgets(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(budgetsConfig(teamAndOrganization)))
	require.NoError(t, err)
	require.Len(t, cfg.Budgets, 2)

	acme, team := cfg.Budgets[0], cfg.Budgets[1]
	assert.Equal(t, "acme", acme.ID)
	assert.Equal(t, "Acme", acme.Name)
	assert.Empty(t, acme.Parent)
	require.NotNil(t, acme.MonthlyLimitUSD)
	assert.Equal(t, "1000", acme.MonthlyLimitUSD.String())
	assert.Nil(t, acme.DailyLimitUSD, "an unset window stays unset")

	assert.Equal(t, "acme", team.Parent)
	assert.Equal(t, []string{"alice", "bob"}, team.Members)
	assert.Equal(t, map[string]string{"groups": "search"}, team.Claims)
	assert.Equal(t, "50", team.DailyLimitUSD.String())
	assert.Equal(t, "200", team.WeeklyLimitUSD.String())
	assert.Equal(t, 600, *team.RateLimitPerMinute)
	require.Contains(t, team.Tools, "goal-data")
	assert.True(t, *team.Tools["goal-data"].Allowed)
	assert.Equal(t, "5", team.Tools["goal-data"].DailyLimitUSD.String())
	assert.Nil(t, team.Tools["goal-data"].MonthlyLimitUSD)
	assert.Equal(t, []float64{0.5, 0.8, 1}, team.Alerts)
	assert.Equal(t, "Europe/Berlin", team.TimeZone)
	assert.Equal(t, []string{"pat"}, team.Approvers)
}

// TestParseConfigBudgetOfEveryone: "everyone": true needs no members,
// claims or identity provider: it counts every principal.
func TestParseConfigBudgetOfEveryone(t *testing.T) {
	t.Parallel()
	doc := `{
  "principals": [{"id": "alice", "apiKeys": ["tg_alice"]}],
  "budgets": [{"id": "acme", "everyone": true, "monthlyLimitUsd": "1000"}, {"id": "team", "parent": "acme", "members": ["alice"], "dailyLimitUsd": "5"}]
}`
	cfg, err := ParseConfig([]byte(doc))
	require.NoError(t, err)
	assert.True(t, cfg.Budgets[0].Everyone)
	assert.False(t, cfg.Budgets[1].Everyone)
}

// TestParseConfigBudgetsOfTokenSubjects: with the "*" template, token
// subjects are principals nobody listed, so a budget may name any.
func TestParseConfigBudgetsOfTokenSubjects(t *testing.T) {
	t.Parallel()
	doc := `{
  "principals": [{"id": "*", "spendControls": {"dailyLimitUsd": "10"}}],
  "oauth": {"issuer": "https://idp.example.com", "audience": "https://gateway.example.com/mcp"},
  "budgets": [{"id": "team", "members": ["carol@example.com"], "monthlyLimitUsd": "100"}]
}`
	cfg, err := ParseConfig([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, []string{"carol@example.com"}, cfg.Budgets[0].Members)
}

// TestParseConfigBudgetErrors: every mistake in "budgets" is refused with
// one line that names the field, whether the file's reader or the
// gateway's check of the tree finds it.
func TestParseConfigBudgetErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		budgets string
		want    string // the message's start
		holds   []string
	}{
		{"unknown field", `[{"id": "a", "monthlyLimitUSD": "1"}]`,
			`config: budgets[0]: unknown field "monthlyLimitUSD"`, nil},
		{"unknown field in a tool's limits", `[{"id": "a", "tools": {"goal-data": {"maxPerCallUsd": "1"}}}]`,
			`config: budgets[0].tools.goal-data: unknown field "maxPerCallUsd"`, nil},
		{"unknown tool", `[{"id": "a", "tools": {"goal-date": {"allowed": false}}}]`,
			`config: budgets[0].tools: no tool "goal-date"`, nil},
		{"no id", `[{"monthlyLimitUsd": "1"}]`, `config: budgets[0].id: is required`, nil},
		{"amount with too many digits", `[{"id": "a", "dailyLimitUsd": "123456789012345678901.0"}]`,
			`config: budgets[0].dailyLimitUsd: `, nil},
		{"amount with too many decimals", `[{"id": "a", "weeklyLimitUsd": "1.00001"}]`,
			`config: budgets[0].weeklyLimitUsd: "1.00001" must be a non-negative amount with at most 4 decimals`, nil},
		{"negative amount", `[{"id": "a", "monthlyLimitUsd": "-1"}]`,
			`config: budgets[0].monthlyLimitUsd: `, nil},
		{"tool amount out of range", `[{"id": "a", "tools": {"goal-data": {"dailyLimitUsd": "1e30"}}}]`,
			`config: budgets[0].tools.goal-data.dailyLimitUsd: `, nil},
		{"alert above 1", `[{"id": "a", "dailyLimitUsd": "1", "alerts": [0.5, 1.5]}]`,
			`config: budgets[0].alerts[1]: 1.5 is not a fraction from above 0 to 1`, nil},
		{"alert of 0", `[{"id": "a", "dailyLimitUsd": "1", "alerts": [0]}]`,
			`config: budgets[0].alerts[0]: 0 is not a fraction from above 0 to 1`, nil},
		{"alert as a string", `[{"id": "a", "dailyLimitUsd": "1", "alerts": ["0.5"]}]`,
			`config: budgets[0].alerts[0]: must be a fraction of the limit such as 0.8, not a string`, nil},
		{"unknown member", `[{"id": "a", "dailyLimitUsd": "1", "members": ["alice", "carol"]}]`,
			`config: budgets[0].members[1]: no principal "carol" is configured`, nil},
		{"unknown approver", `[{"id": "a", "dailyLimitUsd": "1", "approvers": ["sam"]}]`,
			`config: budgets[0].approvers[0]: no approver "sam" is configured`, nil},
		{"a principal as approver", `[{"id": "a", "dailyLimitUsd": "1", "approvers": ["alice"]}]`,
			`config: budgets[0].approvers[0]: no approver "alice" is configured`, nil},
		{"claim that is not a string", `[{"id": "a", "dailyLimitUsd": "1", "claims": {"groups": ["search"]}}]`,
			`config: budgets[0].claims.groups: must be the string the claim equals or holds`, nil},
		{"rate of 0", `[{"id": "a", "rateLimitPerMinute": 0}]`,
			`config: budgets[0].rateLimitPerMinute: must be at least 1`, nil},
		{"id with a NUL", `[{"id": "a\u0000", "dailyLimitUsd": "1"}]`,
			`config: budgets[0].id: holds the control character U+0000`, nil},
		{"name with a NUL", `[{"id": "a", "name": "Search\u0000team", "dailyLimitUsd": "1"}]`,
			`config: budgets[0].name: holds the control character U+0000`, nil},
		{"name with an escape", `[{"id": "a", "name": "\u001b[31mSearch", "dailyLimitUsd": "1"}]`,
			`config: budgets[0].name: holds the control character U+001B`, nil},
		{"member with a control character", `[{"id": "a", "dailyLimitUsd": "1", "members": ["alice", "bo\u0007b"]}]`,
			`config: budgets[0].members[1]: holds the control character U+0007`, nil},
		{"approver with a NUL", `[{"id": "a", "dailyLimitUsd": "1", "approvers": ["p\u0000at"]}]`,
			`config: budgets[0].approvers[0]: holds the control character U+0000`, nil},
		{"parent with a NUL", `[{"id": "a", "dailyLimitUsd": "1", "parent": "acme\u0000"}]`,
			`config: budgets[0].parent: holds the control character U+0000`, nil},
		{"everyone not a boolean", `[{"id": "a", "dailyLimitUsd": "1", "everyone": "yes"}]`,
			`config: budgets[0].everyone: `, nil},

		// Found by the gateway's check of the tree, named the same way.
		{"duplicate id", `[{"id": "a", "dailyLimitUsd": "1"}, {"id": "a", "dailyLimitUsd": "2"}]`,
			`config: budgets[1].id: `, []string{`"a"`}},
		{"unknown parent", `[{"id": "a", "dailyLimitUsd": "1", "parent": "acme"}]`,
			`config: budgets[0].parent: `, []string{`"acme"`}},
		{"parent cycle", `[{"id": "acme", "dailyLimitUsd": "1", "parent": "team"}, {"id": "team", "dailyLimitUsd": "1", "parent": "acme"}]`,
			`config: budgets[1].parent: `, []string{"acme -> team -> acme"}},
		{"budget with no limit", `[{"id": "a", "members": ["alice"]}]`,
			`config: budgets[0]: `, []string{"limit"}},
		{"unknown time zone", `[{"id": "a", "dailyLimitUsd": "1", "timeZone": "Europe/Berlinn"}]`,
			`config: budgets[0].timeZone: `, []string{`"Europe/Berlinn"`}},
		{"id that is no label", `[{"id": "Search Team", "dailyLimitUsd": "1"}]`,
			`config: budgets[0].id: `, []string{`"Search Team"`}},
		{"everyone with members", `[{"id": "a", "dailyLimitUsd": "1", "everyone": true, "members": ["alice"]}]`,
			`config: budgets[0].members: a budget of everyone names no members`, nil},
		{"everyone with claims", `[{"id": "a", "dailyLimitUsd": "1", "everyone": true, "claims": {"groups": "staff"}}]`,
			`config: budgets[0].claims: a budget of everyone names no claims`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(budgetsConfig(tt.budgets)))
			require.Error(t, err)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "a ConfigError: %v", err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "got %q, want it to start with %q", err, tt.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
			for _, s := range tt.holds {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// TestParseConfigBudgetClaimsNeedTokens: claims match access tokens only,
// so without an identity provider they would silently match nobody.
func TestParseConfigBudgetClaimsNeedTokens(t *testing.T) {
	t.Parallel()
	doc := `{"principals": [{"id": "alice", "apiKeys": ["tg_alice"]}],
	         "budgets": [{"id": "a", "dailyLimitUsd": "1", "claims": {"groups": "search"}}]}`
	_, err := ParseConfig([]byte(doc))
	require.Error(t, err)
	assert.Equal(t, `config: budgets[0].claims: claims match access tokens, which need an "oauth" section; API keys join a budget by members`, err.Error())
}

// TestREADMEBudgetsConfigExample keeps the README's budgets example valid
// and saying what the section says of it.
func TestREADMEBudgetsConfigExample(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig(readmeConfigExample(t, "Budgets for teams and the organization"))
	require.NoError(t, err)
	require.Len(t, cfg.Budgets, 2)
	acme, team := cfg.Budgets[0], cfg.Budgets[1]
	assert.Equal(t, "acme", acme.ID)
	assert.NotNil(t, acme.MonthlyLimitUSD)
	assert.True(t, acme.Everyone, "the organization's ceiling holds every caller")
	assert.Equal(t, "acme", team.Parent)
	assert.Equal(t, []string{"alice", "bob"}, team.Members)
	assert.Equal(t, map[string]string{"groups": "search"}, team.Claims)
	assert.NotNil(t, team.DailyLimitUSD)
	assert.NotNil(t, team.WeeklyLimitUSD)
	assert.NotNil(t, team.Tools["goal-data"].DailyLimitUSD)
	assert.NotEmpty(t, team.Alerts)
	assert.Equal(t, "Europe/Berlin", team.TimeZone)
	assert.Equal(t, []string{"pat"}, team.Approvers)
	assert.NotEmpty(t, cfg.Approvals.WebhookURL, "alerts go to the approvals' webhook")
}
