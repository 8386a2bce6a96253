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
)

// A grant carries the token's string claims and the strings of its array
// claims, for budgets to match people by their groups; anything else (a
// number, an object, the token's own envelope) is left out, and a token
// stuffed with claims is cut to the bounds.
func TestVerifierKeepsTheClaimsBudgetsMatch(t *testing.T) {
	t.Parallel()
	idp := testidp.Start(t, audience)
	many := map[string]any{}
	for i := range 70 {
		many[fmt.Sprintf("c%02d", i)] = "v"
	}
	values := make([]any, 150)
	for i := range values {
		values[i] = fmt.Sprintf("g%03d", i)
	}
	idp.AddClient(testidp.Client{ID: "alice", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{
		"groups":  []any{"search", 7, "ops", map[string]any{"x": "y"}, strings.Repeat("x", 257), ""},
		"dept":    "eng",
		"level":   3,
		"profile": map[string]any{"team": "search"},
		"long":    strings.Repeat("y", 257),
	}})
	idp.AddClient(testidp.Client{ID: "stuffed", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: many})
	idp.AddClient(testidp.Client{ID: "wide", Secret: "s", Scopes: []string{oauth.DefaultCallScope}, Claims: map[string]any{"groups": values}})
	v := newVerifier(t, idp, nil)
	ctx := context.Background()

	g, err := v.VerifyToken(ctx, idp.Token(t, "alice"))
	require.NoError(t, err)
	assert.Equal(t, "alice", g.Principal)
	assert.Equal(t, []string{"search", "ops"}, g.Claims["groups"], "the strings of an array claim, in order")
	assert.Equal(t, []string{"eng"}, g.Claims["dept"])
	assert.Equal(t, []string{"alice"}, g.Claims["sub"])
	for _, absent := range []string{"level", "profile", "long", "iss", "aud", "exp", "iat", "jti"} {
		assert.NotContains(t, g.Claims, absent)
	}

	g, err = v.VerifyToken(ctx, idp.Token(t, "stuffed"))
	require.NoError(t, err)
	assert.Len(t, g.Claims, 64, "at most 64 claims")

	g, err = v.VerifyToken(ctx, idp.Token(t, "wide"))
	require.NoError(t, err)
	require.Len(t, g.Claims["groups"], 100, "at most 100 values of a claim")
	assert.Equal(t, "g099", g.Claims["groups"][99])
}
