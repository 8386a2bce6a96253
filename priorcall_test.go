package toolgate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestPriorCallTellsWhatAKeyHolds(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	ctx := context.Background()

	prior, err := gw.PriorCall(ctx, "alice", "k1")
	require.NoError(t, err)
	assert.Nil(t, prior, "an unused key holds nothing")
	_, err = gw.PriorCall(ctx, "alice", "")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeIdempotencyKeyMissing)

	// While the call runs: its quote, which retries it as the same request.
	release := make(chan struct{})
	reached := make(chan struct{})
	next := gw.Upstream.Handler()
	gw.Upstream.HandleFunc(func(w http.ResponseWriter, r *http.Request) {
		close(reached)
		<-release
		next.ServeHTTP(w, r)
	})
	q := gw.MustQuote(t, "alice", "echo")
	req := toolgatetype.CallRequest{Tool: "echo", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`),
		ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: "k1"}
	done := make(chan *toolgatetype.CallResult)
	go func() {
		res, err := gw.Call(ctx, "alice", req)
		assert.NoError(t, err)
		done <- res
	}()
	<-reached
	prior, err = gw.PriorCall(ctx, "alice", "k1")
	require.NoError(t, err)
	require.NotNil(t, prior)
	assert.Nil(t, prior.Result)
	assert.Equal(t, q.Quote.ID, prior.QuoteID)
	_, err = gw.Call(ctx, "alice", req)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeIdempotencyKeyInUse)
	close(release)
	first := <-done

	// Finished: the stored result, as a retry would get it.
	prior, err = gw.PriorCall(ctx, "alice", "k1")
	require.NoError(t, err)
	require.NotNil(t, prior.Result)
	assert.True(t, prior.Result.Replayed)
	assert.Equal(t, string(first.Body), string(prior.Result.Body))
	assert.Equal(t, first.Execution.ID, prior.Result.Execution.ID)
	assert.Empty(t, prior.QuoteID)

	// Keys are each principal's own.
	prior, err = gw.PriorCall(ctx, "bob", "k1")
	require.NoError(t, err)
	assert.Nil(t, prior)
	gw.Upstream.RequireCalls(t, 1)
}

func TestBlockedToolsLayersOperatorAndCallerControls(t *testing.T) {
	t.Parallel()
	no, yes := registry.Bool(false), registry.Bool(true)
	gw := toolgatetest.New(t, &toolgatetest.Options{Config: &toolgate.Config{SpendControls: toolgate.StaticSpendControls{
		"alice": {Tools: map[string]toolgatetype.ToolSpendControls{"echo": {Allowed: no}, "exchange-rates": {Allowed: yes}}},
	}}})
	ctx := context.Background()
	// alice cannot allow what the operator blocks, and can block more.
	require.NoError(t, gw.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{Tools: map[string]toolgatetype.ToolSpendControls{
		"echo": {Allowed: yes}, "public-holidays": {Allowed: no}}}))

	blocked, err := gw.BlockedTools(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"echo": true, "public-holidays": true}, blocked)
	blocked, err = gw.BlockedTools(ctx, "bob")
	require.NoError(t, err)
	assert.Empty(t, blocked)

	// What the list leaves out is what a call is refused.
	_, err = gw.CallApproved(t, "alice", "echo", `{"v":"x"}`)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeSpendLimitExceeded)
	res, err := gw.CallApproved(t, "alice", "exchange-rates", `{"base":"USD","quotes":"EUR"}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
}
