package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestApprovalRequestsOverTheLimitAreRateLimited(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newApproverEnv(t, []toolSpec{callable}, func(c *toolgate.Config) {
		c.ApprovalRequestLimit = toolgatetype.RequestLimit{Max: 3, Window: time.Minute}
		c.Metrics = reg
	})
	ctx := context.Background()
	ask := func(principal, v string) error {
		q := e.quote(principal, "echo")
		_, err := e.gw.RequestApproval(ctx, principal, toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(fmt.Sprintf(`{"v":%q}`, v))})
		return err
	}
	for i := range 3 {
		require.NoError(t, ask("agent", fmt.Sprint(i)))
		e.clock.Advance(10 * time.Second)
	}
	refused := requireCode(t, ask("agent", "one too many"), toolgatetype.CodeRateLimited)
	assert.Equal(t, 30*time.Second, refused.RetryAfter, "until the window, begun by the first, ends")
	require.NoError(t, ask("alice", "x"), "each principal has its own window")

	e.clock.Advance(30 * time.Second)
	require.NoError(t, ask("agent", "later"), "a new window")

	list, err := e.gw.ListApprovalRequests(ctx, "pat", toolgatetype.ApprovalListOptions{Status: toolgatetype.ApprovalStatusAll, Limit: 100})
	require.NoError(t, err)
	assert.Len(t, list.ApprovalRequests, 5, "the refused one was never created")
	assert.Equal(t, 1.0, gathered(t, reg, "toolgate_approval_requests_total", "decision", "limited"))
}

func TestApprovalRequestLimitDefaultsToThirtyAMinute(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	ctx := context.Background()
	q := e.quote("agent", "echo")
	for i := range toolgate.DefaultApprovalRequestMax {
		_, err := e.gw.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(fmt.Sprintf(`{"v":"%d"}`, i))})
		require.NoError(t, err, "request %d", i+1)
	}
	_, err := e.gw.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"31"}`)})
	requireCode(t, err, toolgatetype.CodeRateLimited)

	off := newApproverEnv(t, []toolSpec{callable}, func(c *toolgate.Config) { c.ApprovalRequestLimit.Max = -1 })
	q = off.quote("agent", "echo")
	for i := range 2 * toolgate.DefaultApprovalRequestMax {
		_, err := off.gw.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(fmt.Sprintf(`{"v":"%d"}`, i))})
		require.NoError(t, err, "no limit: request %d", i+1)
	}
}

func TestIdenticalApprovalRequestsAtOnceGiveOne(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newApproverEnv(t, []toolSpec{callable}, func(c *toolgate.Config) { c.Metrics = reg })
	ctx := context.Background()
	q := e.quote("agent", "echo")
	const n = 20
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			// The same input, written differently: the canonical form is the same.
			input := `{"v":"hi"}`
			if i%2 == 1 {
				input = `{ "v" : "hi" }`
			}
			r, err := e.gw.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(input)})
			errs[i] = err
			if err == nil {
				ids[i] = r.ID
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "request %d", i)
		assert.Equal(t, ids[0], ids[i], "request %d is answered with the one request", i)
	}
	list, err := e.store.ListApprovalRequests(ctx, storage.ApprovalRequestFilter{Principals: []string{"agent"}, Limit: 100})
	require.NoError(t, err)
	assert.Len(t, list, 1, "one request for a person to decide")
	assert.Equal(t, 1.0, gathered(t, reg, "toolgate_approval_requests_total", "decision", "created"))
	assert.Equal(t, float64(n-1), gathered(t, reg, "toolgate_approval_requests_total", "decision", "same_pending"))

	// Once decided, the same call can be asked again: a new request.
	e.approve(ids[0], "")
	r, err := e.gw.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)})
	require.NoError(t, err)
	assert.NotEqual(t, ids[0], r.ID)
}
