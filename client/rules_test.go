package client

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/rules"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The organization's rules through the client: a quote decides the rules
// on the input it carries, a deny comes back naming its rule, and the
// registry is listed as the client's caller sees it.
func TestRulesThroughTheClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOptions{config: &toolgate.Config{Rules: []rules.Rule{
		{Name: "no-secrets", When: "tool.slug == 'paid' && input.v == 'secret'", Effect: rules.Deny, Message: "no secrets out"},
		{Name: "alice-sees-no-blocked", When: "principal.id == 'alice' && tool.slug == 'blocked'", Effect: rules.Hide},
	}}})
	c := e.client(nil)
	ctx := context.Background()

	q, err := c.Quote(ctx, "paid")
	require.NoError(t, err)
	assert.Equal(t, []toolgatetype.PolicyRule{{Name: "no-secrets", Effect: "deny", Message: "no secrets out", Pending: true}}, q.Policy.Rules)
	q, err = c.QuoteWith(ctx, "paid", toolgatetype.QuoteOptions{Input: []byte(`{"v":"secret"}`)})
	require.NoError(t, err)
	assert.False(t, q.Policy.Callable)
	assert.Contains(t, q.Policy.Reasons, "Rule no-secrets: no secrets out")
	_, err = c.QuoteWith(ctx, "paid", toolgatetype.QuoteOptions{Input: []byte(`{"v":`)})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest)

	q, err = c.Quote(ctx, "paid")
	require.NoError(t, err)
	_, err = c.Call(ctx, toolgatetype.CallRequest{Tool: "paid", QuoteID: q.Quote.ID, Input: []byte(`{"v":"secret"}`)})
	te := toolgatetest.RequireCode(t, err, toolgatetype.CodeRuleDenied)
	assert.Equal(t, &toolgatetype.RuleRef{Name: "no-secrets", Message: "no secrets out"}, te.Rule)
	e.gw.Upstream.RequireCalls(t, 0)

	var slugs []string
	for entry, err := range c.Entries(ctx, "") {
		require.NoError(t, err)
		slugs = append(slugs, entry.Slug)
	}
	slices.Sort(slugs)
	assert.Equal(t, []string{"echo", "paid"}, slugs, "blocked is hidden from alice")
	_, err = c.Entry(ctx, "blocked")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeToolNotFound)
	_, err = c.Quote(ctx, "blocked")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeToolNotFound)
	_, err = e.clientAs("agent", nil).Entry(ctx, "blocked")
	require.NoError(t, err, "another caller sees it")
}
