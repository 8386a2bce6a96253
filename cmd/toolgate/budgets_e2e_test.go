package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerRefusesBadBudgets starts the server binary on configs with a
// mistake in "budgets": each stops it before it listens, with exit status
// 2 and one line on stderr naming the field and what is wrong.
func TestServerRefusesBadBudgets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		budgets string
		field   string   // the path the line names
		holds   []string // and what else it must say
	}{
		{"parent cycle", `[{"id": "acme", "monthlyLimitUsd": "1000", "parent": "search-team"},
		                   {"id": "search-team", "dailyLimitUsd": "50", "parent": "acme"}]`,
			"budgets[1].parent", []string{"acme -> search-team -> acme"}},
		{"unknown parent", `[{"id": "search-team", "dailyLimitUsd": "50", "parent": "acme"}]`,
			"budgets[0].parent", []string{`"acme"`}},
		{"unknown member", `[{"id": "search-team", "dailyLimitUsd": "50", "members": ["alice", "mallory"]}]`,
			"budgets[0].members[1]", []string{`no principal "mallory" is configured`}},
		{"unknown approver", `[{"id": "search-team", "dailyLimitUsd": "50", "approvers": ["sam"]}]`,
			"budgets[0].approvers[0]", []string{`no approver "sam" is configured`}},
		{"duplicate id", `[{"id": "acme", "monthlyLimitUsd": "1000"}, {"id": "acme", "dailyLimitUsd": "50"}]`,
			"budgets[1].id", []string{`"acme"`}},
		{"no limit", `[{"id": "acme", "members": ["alice"], "alerts": [0.8]}]`,
			"budgets[0]", []string{"limit"}},
		{"unknown time zone", `[{"id": "acme", "monthlyLimitUsd": "1000", "timeZone": "Mars/Olympus_Mons"}]`,
			"budgets[0].timeZone", []string{`"Mars/Olympus_Mons"`}},
		{"amount out of range", `[{"id": "acme", "monthlyLimitUsd": "100000000000000000000000"}]`,
			"budgets[0].monthlyLimitUsd", []string{"20"}},
		{"amount too precise", `[{"id": "acme", "dailyLimitUsd": "0.00001"}]`,
			"budgets[0].dailyLimitUsd", []string{"4 decimals"}},
		{"alert above 1", `[{"id": "acme", "monthlyLimitUsd": "1000", "alerts": [0.5, 1.2]}]`,
			"budgets[0].alerts[1]", []string{"1.2"}},
		{"alert of 0", `[{"id": "acme", "monthlyLimitUsd": "1000", "alerts": [0]}]`,
			"budgets[0].alerts[0]", nil},
		{"unknown field", `[{"id": "acme", "monthlyLimitUSD": "1000"}]`,
			"budgets[0]", []string{`unknown field "monthlyLimitUSD"`}},
		{"a claim tokens never carry", `[{"id": "acme", "monthlyLimitUsd": "1000", "claims": {"groups": "staff", "iss": "https://idp.example.com"}}]`,
			"budgets[0].claims[\"iss\"]", []string{"never matched"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var budgets any
			require.NoError(t, json.Unmarshal([]byte(tt.budgets), &budgets))
			path := writeConfig(t, map[string]any{
				"listen": "127.0.0.1:0",
				"principals": []any{
					map[string]any{"id": "alice", "apiKeys": []string{randomKey(t, "tg_test_alice_")}},
					map[string]any{"id": "bob", "apiKeys": []string{randomKey(t, "tg_test_bob_")}},
				},
				"approvers": []any{map[string]any{"id": "pat", "keys": []string{randomKey(t, "tg_test_pat_")}}},
				"budgets":   budgets,
				// Claims match access tokens only, so the tokens' section is
				// there for every case.
				"oauth": map[string]any{"issuer": "https://idp.example.com", "audience": "https://gateway.example.com/mcp"},
			})
			srv := startProcess(t, []string{"-offline", "-config", path})
			assert.Equal(t, exitUsage, srv.wait(exitTimeout), "stderr: %s", srv.stderr.String())
			stderr := srv.stderr.String()
			prefix := "toolgate: " + path + ": config: " + tt.field + ": "
			assert.True(t, strings.HasPrefix(stderr, prefix), "stderr %q starts with %q", stderr, prefix)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			assert.True(t, strings.HasSuffix(stderr, "\n"))
			for _, s := range tt.holds {
				assert.Contains(t, stderr, s)
			}
			assert.Empty(t, srv.stdout.String(), "it never listened")
		})
	}
}
