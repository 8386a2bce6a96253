package postgres_test

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// TestGatewayRoundTrips pins what a quote and a call cost in round trips to
// the database, where each is a network wait and a wakeup on both sides: a
// quote reads and stores in one batch; a new call on the instance that
// quoted it is answered its reads from memory, then is admitted in one
// batch (which checks what was remembered) and is recorded in one; a call
// quoted on another instance reads in one batch first. A change that adds
// a round trip to every call shows up here. It pins the statements too.
//
// Every finish stores its receipt, which costs no round trip once the
// Store knows the principal's chain head (each principal's first finish in
// the process reads it, one round trip more, here in the warm-up calls).
func TestGatewayRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, trips := benchPool(t)
	t.Cleanup(pool.Close)
	schema := newSchema(t)
	store, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	reg := registry.New()
	require.NoError(t, reg.Register(echoTool()))
	// carol counts in two budgets, her team's and its parent's; alice and
	// bob in none, so their calls cost what they did before budgets.
	monthly, daily, perMinute := decimal.RequireFromString("1000.0000"), decimal.RequireFromString("50.0000"), 600
	budgets := []toolgatetype.BudgetDefinition{
		{ID: "acme", MonthlyLimitUSD: &monthly},
		{ID: "search", Parent: "acme", Members: []string{"carol"}, DailyLimitUSD: &daily, RateLimitPerMinute: &perMinute},
	}
	gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: toolgatetest.NewUpstream(), Budgets: budgets})
	require.NoError(t, err)
	// The statements' first use on a connection prepares them, and each
	// principal's first sealed finish reads its chain head; those one-offs
	// are not what is pinned.
	for _, principal := range []string{"alice", "bob", "carol"} {
		warm, err := gw.Quote(ctx, principal, "echo")
		require.NoError(t, err)
		_, err = gw.Call(ctx, principal, echoCall(warm, "warm-up"))
		require.NoError(t, err)
	}

	trips.reset()
	q, err := gw.Quote(ctx, "alice", "echo")
	require.NoError(t, err)
	assert.EqualValues(t, 1, trips.n.Load(), "a quote")
	assert.EqualValues(t, 5, trips.stmts.Load(), "a quote's statements")

	// callTrips makes a call that completes and returns its round trips and
	// statements.
	callTrips := func(principal string, q *toolgatetype.QuoteResult, key string) [2]int64 {
		t.Helper()
		trips.reset()
		res, err := gw.Call(ctx, principal, echoCall(q, key))
		require.NoError(t, err)
		assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
		return [2]int64{trips.n.Load(), trips.stmts.Load()}
	}
	assert.Equal(t, [2]int64{2, 4}, callTrips("alice", q, "k1"), "a new call on the quoting instance: its admission, its result")

	// Quoted elsewhere: this instance has nothing to remember.
	other, err := postgres.New(ctx, sharedPool(t), &postgres.Config{Schema: schema})
	require.NoError(t, err)
	elsewhere, err := toolgate.New(other, &toolgate.Config{Registry: reg, Transport: toolgatetest.NewUpstream(), Budgets: budgets})
	require.NoError(t, err)
	qo, err := elsewhere.Quote(ctx, "alice", "echo")
	require.NoError(t, err)
	assert.Equal(t, [2]int64{3, 7}, callTrips("alice", qo, "k2"), "a new call quoted elsewhere: its reads, its admission, its result")

	// A principal with spend controls of every kind and a standing
	// approval is remembered as exactly: the admission's check finds them
	// unchanged, and the call still costs two round trips.
	daily, perCall := decimal.RequireFromString("25.0000"), decimal.RequireFromString("5.50")
	perMinute, allowed := 600, true
	require.NoError(t, gw.SetSpendControls(ctx, "bob", toolgatetype.SpendControls{
		DailyLimitUSD: &daily, RateLimitPerMinute: &perMinute,
		Tools: map[string]toolgatetype.ToolSpendControls{"echo": {Allowed: &allowed, MaxPerCallUSD: &perCall}},
	}))
	qb, err := gw.Quote(ctx, "bob", "echo")
	require.NoError(t, err)
	_, err = gw.SetApproval(ctx, "bob", "echo", toolgatetype.ApprovalNeverAsk, *qb.Quote.ManifestDigest)
	require.NoError(t, err)
	qb, err = gw.Quote(ctx, "bob", "echo")
	require.NoError(t, err)
	assert.Equal(t, [2]int64{2, 4}, callTrips("bob", qb, "k3"), "a call of a principal with controls and an approval")

	// A pair of a principal in two budgets is still three round trips:
	// the quote measures the budgets in its batch, and the admission takes
	// their locks in its own, in one more statement.
	trips.reset()
	qc, err := gw.Quote(ctx, "carol", "echo")
	require.NoError(t, err)
	assert.EqualValues(t, 1, trips.n.Load(), "a quote in two budgets")
	require.Len(t, qc.Controls.Budgets, 2)
	assert.Equal(t, [2]int64{2, 5}, callTrips("carol", qc, "k4"), "a call in two budgets: its admission, its result")
	spend, err := store.SpendSummary(ctx, storage.SpendQuery{Budget: "acme", GroupBy: toolgatetype.SpendByPrincipal})
	require.NoError(t, err)
	require.Len(t, spend, 1)
	assert.Equal(t, storage.SpendGroup{Key: "carol", TotalUSD: spend[0].TotalUSD, Count: 2}, spend[0], "the warm-up call and this one")

	// What the batched reads answered is what decided: the charge shows
	// in the next quote's controls.
	next, err := gw.Quote(ctx, "alice", "echo")
	require.NoError(t, err)
	assert.Equal(t, "0.3300", next.Controls.Global.DailyUsedUSD)
	usage, err := store.Usage(ctx, q.Tool.ID)
	require.NoError(t, err)
	assert.Equal(t, storage.Usage{Count: 7, UniqueUsers: 3}, usage)

	// Each finish kept its receipt.
	for principal, calls := range map[string]int{"alice": 3, "bob": 2} {
		chain, err := store.ListReceipts(ctx, principal, 0, toolgatetype.MaxReceiptPage)
		require.NoError(t, err)
		assert.Len(t, chain, calls, "%s's receipts", principal)
	}

	// A tool call for a layer that quotes on the caller's behalf (MCP): its
	// quote reads the key's record in the same batch, and its call is
	// answered its reads from memory.
	trips.reset()
	toolCall := toolgatetype.ToolCallRequest{
		Tool: "echo", Input: []byte(`{"v":"hi"}`), IdempotencyKey: "t1",
		Approval: &toolgatetype.CallerApproval{ManifestDigest: *next.Quote.ManifestDigest},
	}
	out := gw.CallTool(ctx, "alice", toolCall)
	require.Nil(t, out.Refusal)
	assert.Equal(t, toolgatetype.StatusCompleted, out.Result.Execution.Status)
	assert.EqualValues(t, 3, trips.n.Load(), "a tool call: its quote, its admission, its result")
	// Its retry is answered from the key's record, read where the quote
	// would have been made: no quote is made.
	trips.reset()
	again := gw.CallTool(ctx, "alice", toolCall)
	require.Nil(t, again.Refusal)
	assert.True(t, again.Result.Replayed)
	assert.EqualValues(t, 1, trips.n.Load(), "a tool call's retry: its quote's batch")
}
