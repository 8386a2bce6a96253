package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A person signed in with the identity provider counts in their team's
// budget by the groups in their token, with no change to the
// configuration: the quote shows the budget, the call is counted in it,
// and once it is spent the next call is refused naming it. A caller with
// no such group, or an API key, is not in it.
func TestTokenGroupsCountInTheTeamsBudget(t *testing.T) {
	t.Parallel()
	limit := decimal.RequireFromString("1000")
	a := newAPI(t, nil, func(c *toolgate.Config) {
		c.Budgets = []toolgatetype.BudgetDefinition{{ID: "search", Name: "Search team",
			Claims: map[string]string{"groups": "search"}, DailyLimitUSD: &limit}}
	})
	idp := withTokens(t, a)
	idp.AddClient(testidp.Client{ID: "sam", Secret: "s", Scopes: []string{oauth.DefaultCallScope},
		Claims: map[string]any{"groups": []any{"staff", "search"}}})
	idp.AddClient(testidp.Client{ID: "olga", Secret: "s", Scopes: []string{oauth.DefaultCallScope},
		Claims: map[string]any{"groups": []any{"staff", "ads"}}})
	used := func() string {
		all, err := a.gw.Budgets(context.Background())
		require.NoError(t, err)
		return all[0].Windows[toolgatetype.BudgetDaily].UsedUSD
	}
	sam := idp.Token(t, "sam")

	r := a.do("POST", "/v1/tools/earthquake-search/quote", sam, "{}")
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	var q struct {
		quoted
		Controls toolgatetype.Controls `json:"controls"`
	}
	require.NoError(t, json.Unmarshal(r.body, &q))
	require.Len(t, q.Controls.Budgets, 1, "the quote shows the budget the token's groups join: %s", r.body)
	assert.Equal(t, "search", q.Controls.Budgets[0].ID)
	assert.Equal(t, "0.0000", q.Controls.Budgets[0].Windows[toolgatetype.BudgetDaily].UsedUSD)

	c := a.call(sam, "earthquake-search", "sam-1", callBody(q.quoted, quakeInput))
	require.Equal(t, http.StatusOK, c.status, "%s", c.body)
	assert.Equal(t, q.Quote.TotalUSD, used(), "the call counts in the team's budget")

	for _, other := range []string{idp.Token(t, "olga"), aliceKey} {
		q := a.quote(other, "earthquake-search")
		c := a.call(other, "earthquake-search", "other-"+q.Quote.ID, callBody(q, quakeInput))
		require.Equal(t, http.StatusOK, c.status, "%s", c.body)
	}
	assert.Equal(t, q.Quote.TotalUSD, used(), "callers outside the team are not counted in it")
}
