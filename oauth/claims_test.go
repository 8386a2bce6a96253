package oauth_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetsByClaims are two budgets that take people in by their groups and
// department, as an operator's would.
var budgetsByClaims = []toolgatetype.BudgetDefinition{
	{ID: "search", Claims: map[string]string{"groups": "search"}},
	{ID: "ops", Claims: map[string]string{"groups": "ops", "dept": "eng"}},
	{ID: "level", Claims: map[string]string{"level": "3", "profile": "search", "iss": "https://idp.example"}},
}

// A grant carries exactly the claims the budgets match: the wanted values
// of a string claim or among an array claim's strings; nothing else of the
// token (other claims, other values, a number, an object, the envelope).
func TestVerifierKeepsTheClaimsBudgetsMatch(t *testing.T) {
	t.Parallel()
	idp := testidp.Start(t, audience)
	idp.AddClient(testidp.Client{ID: "alice", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{
		"groups":  []any{"search", 7, "other", "ops", map[string]any{"x": "y"}, "search", ""},
		"dept":    "eng",
		"team":    "search",
		"level":   3,
		"profile": map[string]any{"team": "search"},
	}})
	v := newVerifier(t, idp, func(c *oauth.Config) { c.BudgetClaims = oauth.BudgetClaims(budgetsByClaims) })

	g, err := v.VerifyToken(context.Background(), idp.Token(t, "alice"))
	require.NoError(t, err)
	assert.Equal(t, "alice", g.Principal)
	assert.Equal(t, map[string][]string{"groups": {"ops", "search"}, "dept": {"eng"}}, g.Claims,
		"the wanted values held, each once; nothing else")
}

// A grant carries all the token's claims for the organization's rules,
// decoded as JSON (numbers as float64, lists and objects as they are),
// envelope claims included, whatever the budgets match.
func TestVerifierKeepsEveryClaimForRules(t *testing.T) {
	t.Parallel()
	idp := testidp.Start(t, audience)
	idp.AddClient(testidp.Client{ID: "alice", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{
		"groups":  []any{"search", "ops"},
		"level":   3,
		"profile": map[string]any{"team": "search"},
	}})
	v := newVerifier(t, idp, nil)

	g, err := v.VerifyToken(context.Background(), idp.Token(t, "alice"))
	require.NoError(t, err)
	assert.Nil(t, g.Claims, "no budget matches claims")
	assert.Equal(t, []any{"search", "ops"}, g.RuleClaims["groups"])
	assert.Equal(t, 3.0, g.RuleClaims["level"])
	assert.Equal(t, map[string]any{"team": "search"}, g.RuleClaims["profile"])
	assert.Equal(t, idp.Issuer, g.RuleClaims["iss"])
	assert.Equal(t, "alice", g.RuleClaims["sub"])
}

// A person in many groups, or with many claims, keeps every claim and value
// a budget matches however large the token is: cutting the token to size
// would let it escape its team's budget.
func TestVerifierKeepsMatchedClaimsOfLargeTokens(t *testing.T) {
	t.Parallel()
	idp := testidp.Start(t, audience)
	groups := make([]any, 0, 150)
	for i := range 150 {
		groups = append(groups, fmt.Sprintf("g%03d", i))
	}
	groups[139] = "search" // the team's group, 140th of 150
	idp.AddClient(testidp.Client{ID: "carol", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{"groups": groups}})
	many := map[string]any{"groups": "search", "dept": strings.Repeat("e", 300)}
	for i := range 70 {
		many[fmt.Sprintf("a%02d", i)] = "v" // names sorting before "groups"
	}
	idp.AddClient(testidp.Client{ID: "dave", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: many})
	long := []toolgatetype.BudgetDefinition{{ID: "long", Claims: map[string]string{"dept": strings.Repeat("e", 300)}}}
	v := newVerifier(t, idp, func(c *oauth.Config) {
		c.BudgetClaims = oauth.BudgetClaims(append(long, budgetsByClaims...))
	})
	ctx := context.Background()

	g, err := v.VerifyToken(ctx, idp.Token(t, "carol"))
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"groups": {"search"}}, g.Claims, "the team's group, 140th of 150, is kept")

	g, err = v.VerifyToken(ctx, idp.Token(t, "dave"))
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"groups": {"search"}, "dept": {strings.Repeat("e", 300)}}, g.Claims,
		"groups kept past 70 claims named before it, and a long value a budget names")
}

// Without budgets that match claims, a grant carries none.
func TestVerifierKeepsNoClaimsWithoutBudgets(t *testing.T) {
	t.Parallel()
	idp := testidp.Start(t, audience)
	idp.AddClient(testidp.Client{ID: "erin", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{"groups": []any{"search"}}})
	v := newVerifier(t, idp, nil)
	g, err := v.VerifyToken(context.Background(), idp.Token(t, "erin"))
	require.NoError(t, err)
	assert.Equal(t, "erin", g.Principal)
	assert.Nil(t, g.Claims)
}
