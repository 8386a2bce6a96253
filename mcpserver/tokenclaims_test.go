package mcpserver_test

import (
	"testing"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Over MCP too, a token's groups put its bearer in their team's budget:
// the team's rate of one call a minute stops the second call of a member
// signed in with the group, and not a caller without it, nor an API key.
func TestHTTPTokenGroupsCountInTheTeamsBudget(t *testing.T) {
	t.Parallel()
	one := 1
	gw := toolgatetest.New(t, &toolgatetest.Options{Config: &toolgate.Config{Budgets: []toolgatetype.BudgetDefinition{{
		ID: "search", Name: "Search team", Claims: map[string]string{"groups": "search"}, RateLimitPerMinute: &one,
	}}}})
	url, idp, _ := mcpWithTokens(t, gw)
	idp.AddClient(testidp.Client{ID: "sam", Secret: "s", Scopes: []string{oauth.DefaultCallScope},
		Claims: map[string]any{"groups": []any{"search"}}})
	idp.AddClient(testidp.Client{ID: "olga", Secret: "s", Scopes: []string{oauth.DefaultCallScope},
		Claims: map[string]any{"groups": []any{"ads"}}})

	sam := connectHTTP(t, url, idp.Token(t, "sam"), approves("once"))
	requireCompleted(t, call(t, sam, "echo", `{"v":"first"}`, nil))
	requireRefusal(t, call(t, sam, "echo", `{"v":"second"}`, nil), toolgatetype.CodeRateLimited)

	olga := connectHTTP(t, url, idp.Token(t, "olga"), approves("once"))
	requireCompleted(t, call(t, olga, "echo", `{"v":"first"}`, nil))
	requireCompleted(t, call(t, olga, "echo", `{"v":"second"}`, nil))
	alice := connectHTTP(t, url, aliceKey, approves("once"))
	requireCompleted(t, call(t, alice, "echo", `{"v":"first"}`, nil))
	requireCompleted(t, call(t, alice, "echo", `{"v":"second"}`, nil))
}
