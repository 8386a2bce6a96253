package postgres_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// TestGrantCallOnPostgres runs approver mode on PostgreSQL through the
// gateway: a call carrying a grant costs the three round trips of any new
// call (the grant is read with the call's other reads, and used up in the
// statement that admits it), and of many calls racing on one grant, one
// runs.
func TestGrantCallOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, trips := benchPool(t)
	t.Cleanup(pool.Close)
	store, err := postgres.New(ctx, pool, &postgres.Config{Schema: newSchema(t)})
	require.NoError(t, err)
	reg := registry.New()
	require.NoError(t, reg.Register(echoTool()))
	upstream := toolgatetest.NewUpstream()
	gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: upstream, Approvers: toolgatetype.StaticApprovers{
		Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
		Approvers: map[string][]string{"pat": {"agent"}},
	}})
	require.NoError(t, err)
	granted := func(key string) toolgatetype.CallRequest {
		q, err := gw.Quote(ctx, "agent", "echo")
		require.NoError(t, err)
		req := echoCall(q, key)
		r, err := gw.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: req.Input})
		require.NoError(t, err)
		_, err = gw.DecideApproval(ctx, "pat", r.ID, toolgatetype.Decision{Approve: true})
		require.NoError(t, err)
		req.ApprovalGrant = r.ID
		return req
	}
	// The statements' first use on a connection prepares them.
	_, err = gw.Call(ctx, "agent", granted("warm-up"))
	require.NoError(t, err)

	req := granted("k1")
	trips.n.Store(0)
	res, err := gw.Call(ctx, "agent", req)
	toolgatetest.RequireCompleted(t, res, err, "0.1100")
	assert.EqualValues(t, 3, trips.n.Load(), "a call with a grant: its reads, its admission, its result")
	used, err := gw.ApprovalRequest(ctx, "agent", req.ApprovalGrant)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusUsed, used.Status)
	assert.Equal(t, res.Execution.ID, used.ExecutionID)

	// 100 calls under 100 keys race on one grant: one runs.
	race := granted("")
	const n = 100
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := race
			r.IdempotencyKey = fmt.Sprintf("race-%d", i)
			_, errs[i] = gw.Call(ctx, "agent", r)
		}()
	}
	close(start)
	wg.Wait()
	ran := 0
	for _, err := range errs {
		if err == nil {
			ran++
			continue
		}
		requireCode(t, err, toolgatetype.CodeQuoteUsed)
	}
	assert.Equal(t, 1, ran)
	upstream.RequireCalls(t, 3)
}
