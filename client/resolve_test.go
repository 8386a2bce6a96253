package client

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// An approver's client resolves an ambiguous call of alice's, as in
// process: charged once, and then the key replays the resolved execution.
func TestResolveExecutionThroughTheClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := toolgatetest.NewDyingStore(memory.New())
	e := newEnv(t, &envOptions{store: store})
	notSafe := false
	require.NoError(t, e.gw.Registry.SetTrust("paid", registry.Trust{RetrySafe: &notSafe}))

	alice := e.client(nil)
	q, err := alice.Quote(ctx, "paid")
	require.NoError(t, err)
	req := toolgatetype.CallRequest{Tool: "paid", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`), IdempotencyKey: "k1"}
	_, err = e.gw.Call(ctx, "alice", req)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeInternal)
	store.Dying.Store(false)
	e.gw.Clock.Advance(toolgate.DefaultIdempotencyLease + toolgate.DefaultQuoteTTL)
	res, err := alice.Call(ctx, req)
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusAmbiguous, res.Execution.Status, "%s", res.Body)

	_, err = alice.ResolveExecution(ctx, res.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusCompleted})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApproverRequired)
	_, err = e.clientAs("sam", nil).ResolveExecution(ctx, res.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusCompleted})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeExecutionNotFound)

	pat := e.clientAs("pat", nil)
	resolved, err := pat.ResolveExecution(ctx, res.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusCompleted, Note: "it ran"})
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.StatusCompleted, resolved.Execution.Status)
	require.NotNil(t, resolved.Execution.Resolution)
	assert.Equal(t, "pat", resolved.Execution.Resolution.ResolvedBy)
	_, err = pat.ResolveExecution(ctx, res.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeExecutionAlreadyResolved)

	again, err := alice.Call(ctx, req)
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	assert.Equal(t, string(resolved.Body), string(again.Body))
	e.gw.Upstream.RequireCalls(t, 1)
}
