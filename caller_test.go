package toolgate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A gateway bound to a principal calls as that principal, makes up a key
// for a call that has none, and says which key a result belongs to.
func TestGatewayFor(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	ctx := context.Background()
	var alice toolgatetype.Caller = gw.For("alice")

	q, err := alice.Quote(ctx, "echo")
	require.NoError(t, err)
	req := toolgatetype.CallRequest{Tool: "echo", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`), ApprovalDigest: *q.Quote.ManifestDigest}
	res, err := alice.Call(ctx, req)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	require.NotEmpty(t, res.IdempotencyKey)

	// The key it made up is the call's: with it, the call is replayed.
	req.IdempotencyKey = res.IdempotencyKey
	again, err := gw.Call(ctx, "alice", req)
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	assert.Equal(t, res.IdempotencyKey, again.IdempotencyKey)
	assert.Equal(t, res.Body, again.Body)
	gw.Upstream.RequireCalls(t, 1)

	// Another principal's quote is not alice's to use.
	_, err = gw.For("bob").Call(ctx, req)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeQuoteNotFound)
	assert.Equal(t, "bob", gw.For("bob").Principal())

	other, err := alice.Call(ctx, toolgatetype.CallRequest{Tool: "echo", QuoteID: gw.MustQuote(t, "alice", "echo").Quote.ID,
		Input: json.RawMessage(`{"v":"hi"}`), ApprovalDigest: *q.Quote.ManifestDigest})
	toolgatetest.RequireCompleted(t, other, err, "0.0000")
	assert.NotEqual(t, res.IdempotencyKey, other.IdempotencyKey, "a new key for each call")
}
