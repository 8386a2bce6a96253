package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetest"
)

// TestGatewayRoundTrips pins what a quote and a call cost in round trips to
// the database, where each is a network wait and a wakeup on both sides: a
// quote reads and stores in one batch, and a new call reads in one batch,
// is admitted in one and is recorded in one. A change that adds a round
// trip to every call shows up here.
func TestGatewayRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, trips := benchPool(t)
	t.Cleanup(pool.Close)
	store, err := postgres.New(ctx, pool, &postgres.Config{Schema: newSchema(t)})
	require.NoError(t, err)
	reg := registry.New()
	require.NoError(t, reg.Register(echoTool()))
	gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: toolgatetest.NewUpstream()})
	require.NoError(t, err)
	// The statements' first use on a connection prepares them; that
	// one-off is not what is pinned.
	warm, err := gw.Quote(ctx, "alice", "echo")
	require.NoError(t, err)
	_, err = gw.Call(ctx, "alice", echoCall(warm, "warm-up"))
	require.NoError(t, err)

	trips.n.Store(0)
	q, err := gw.Quote(ctx, "alice", "echo")
	require.NoError(t, err)
	assert.EqualValues(t, 1, trips.n.Load(), "a quote")

	trips.n.Store(0)
	res, err := gw.Call(ctx, "alice", echoCall(q, "k1"))
	require.NoError(t, err)
	assert.Equal(t, toolgate.StatusCompleted, res.Execution.Status)
	assert.EqualValues(t, 3, trips.n.Load(), "a new call: its reads, its admission, its result")

	// What the batched reads answered is what decided: the charge shows
	// in the next quote's controls.
	next, err := gw.Quote(ctx, "alice", "echo")
	require.NoError(t, err)
	assert.Equal(t, "0.2200", next.Controls.Global.DailyUsedUSD)
	usage, err := store.Usage(ctx, q.Tool.ID)
	require.NoError(t, err)
	assert.Equal(t, storage.Usage{Count: 2, UniqueUsers: 1}, usage)
}
