package postgres_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The tests in this file run whole gateways, not just stores: two
// toolgate.Gateways, each with a Store on a pool of its own over one schema,
// stand in for two processes behind a load balancer. They share what two
// such processes would: the database, the same tool definitions, the
// provider and the time (a FakeClock, so a lease can run out on demand).

// echoTool is toolgatetest's echo tool at $0.1000 a call ($0.1100 with the
// default fee), its endpoint and its provider's payment account verified:
// with its low-risk capabilities it is covered by user policy, so calls
// need no approval.
func echoTool() *registry.Tool {
	t := toolgatetest.Priced(toolgatetest.EchoTool(), "0.1000")
	t.Endpoint.Verified, t.Provider.PaymentVerified = true, true
	t.UpdatedAt = t0
	return t
}

// holdingProvider is the echo provider, with hold run before the n-th
// request (counting from 1) is answered.
func holdingProvider(hold func(n int64)) *toolgatetest.Upstream {
	p := toolgatetest.NewUpstream()
	var n atomic.Int64
	echo := p.Handler()
	p.HandleFunc(func(w http.ResponseWriter, r *http.Request) {
		hold(n.Add(1))
		echo.ServeHTTP(w, r)
	})
	return p
}

// cluster is one test's gateways over one schema, one per instance.
type cluster struct {
	gws      []*toolgate.Gateway
	stores   []storage.Store
	clock    *toolgatetest.FakeClock
	provider *toolgatetest.Upstream
}

// newCluster puts a gateway over each store, all sharing one registry, one
// clock and one provider. cfg (which may be nil) supplies the rest of each
// gateway's config.
func newCluster(t *testing.T, stores []storage.Store, p *toolgatetest.Upstream, cfg *toolgate.Config) *cluster {
	t.Helper()
	reg := registry.New()
	require.NoError(t, reg.Register(echoTool()))
	c := &cluster{stores: stores, clock: toolgatetest.NewFakeClock(t0), provider: p}
	for _, s := range stores {
		gc := toolgate.Config{}
		if cfg != nil {
			gc = *cfg
		}
		gc.Registry, gc.Clock, gc.Transport = reg, c.clock, p
		gw, err := toolgate.New(s, &gc)
		require.NoError(t, err)
		c.gws = append(c.gws, gw)
	}
	return c
}

// twoGateways is a cluster of two gateways on two instances over one schema.
func twoGateways(t *testing.T, p *toolgatetest.Upstream, cfg *toolgate.Config) *cluster {
	t.Helper()
	instances := twoInstances(t)
	return newCluster(t, []storage.Store{instances[0], instances[1]}, p, cfg)
}

// quote asks gateway i for a quote of the echo tool and checks that the
// call will need no approval, as every test here assumes.
func (c *cluster) quote(t *testing.T, i int, principal string) *toolgatetype.QuoteResult {
	t.Helper()
	q, err := c.gws[i].Quote(t.Context(), principal, "echo")
	require.NoError(t, err)
	require.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, q.Policy.Approval.Requirement)
	require.Equal(t, "0.1100", q.Quote.TotalUSD)
	return q
}

func echoCall(q *toolgatetype.QuoteResult, key string) toolgatetype.CallRequest {
	return toolgatetype.CallRequest{
		Tool:           q.Tool.Slug,
		QuoteID:        q.Quote.ID,
		Input:          json.RawMessage(`{"v":"hello"}`),
		IdempotencyKey: key,
	}
}

func requireCode(t *testing.T, err error, code toolgatetype.Code) *toolgatetype.Error {
	t.Helper()
	return toolgatetest.RequireCode(t, err, code)
}

func (c *cluster) requireUsage(t *testing.T, q *toolgatetype.QuoteResult, want storage.Usage) {
	t.Helper()
	u, err := c.stores[0].Usage(t.Context(), q.Tool.ID)
	require.NoError(t, err)
	assert.Equal(t, want, u)
}

// TestGatewaysOneKeyReachUpstreamOnce fires 100 identical calls, one
// Idempotency-Key, at two gateways at once. The provider is reached once;
// every other caller gets the stored result byte for byte or is told the key
// is busy, and the charge is taken once.
func TestGatewaysOneKeyReachUpstreamOnce(t *testing.T) {
	t.Parallel()
	// Hold the provider a moment so the racers overlap the running call.
	c := twoGateways(t, holdingProvider(func(int64) { time.Sleep(100 * time.Millisecond) }), nil)
	ctx := t.Context()
	q := c.quote(t, 0, "alice")
	req := echoCall(q, "one-key")

	const n = 100
	results := make([]*toolgatetype.CallResult, n)
	errs := make([]error, n)
	goAll(n, func(i int) {
		results[i], errs[i] = c.gws[i%2].Call(ctx, "alice", req)
	})

	assert.EqualValues(t, 1, c.provider.Calls(), "the provider is reached once")
	final, err := c.gws[1].Call(ctx, "alice", req)
	require.NoError(t, err)
	require.True(t, final.Replayed)
	require.Equal(t, toolgatetype.StatusCompleted, final.Execution.Status)
	again, err := c.gws[0].Call(ctx, "alice", req)
	require.NoError(t, err)
	assert.Equal(t, final.Body, again.Body, "both instances replay the same bytes")

	ran, replayed, busy := 0, 0, 0
	for i := range n {
		if errs[i] != nil {
			requireCode(t, errs[i], toolgatetype.CodeIdempotencyKeyInUse)
			busy++
			continue
		}
		assert.Equal(t, string(final.Body), string(results[i].Body), "reply %d", i)
		if results[i].Replayed {
			replayed++
		} else {
			ran++
		}
	}
	assert.Equal(t, 1, ran, "exactly one call ran")
	t.Logf("%d ran, %d replayed, %d busy", ran, replayed, busy)
	assertUsed(t, c.stores[0], "alice", "0.1100", "1")
	c.requireUsage(t, q, storage.Usage{Count: 1, UniqueUsers: 1})
}

// TestGatewaysDailyLimitHolds fires 200 paid calls, each with its own quote
// and key, at two gateways at once, against a daily limit that fits exactly
// 50 of them. Every quote is used on the other gateway than the one that
// issued it.
func TestGatewaysDailyLimitHolds(t *testing.T) {
	t.Parallel()
	daily := decimal.RequireFromString("5.5000")
	perMinute := 1000 // the default of 60 would refuse first
	controls := toolgatetype.StaticSpendControls{"alice": {DailyLimitUSD: &daily, RateLimitPerMinute: &perMinute}}
	c := twoGateways(t, toolgatetest.NewUpstream(), &toolgate.Config{SpendControls: controls})
	ctx := t.Context()

	const n = 200
	quotes := make([]*toolgatetype.QuoteResult, n)
	for i := range quotes {
		quotes[i] = c.quote(t, i%2, "alice")
	}
	results := make([]*toolgatetype.CallResult, n)
	errs := make([]error, n)
	goAll(n, func(i int) {
		results[i], errs[i] = c.gws[(i+1)%2].Call(ctx, "alice", echoCall(quotes[i], fmt.Sprintf("key-%d", i)))
	})

	completed, refused := 0, 0
	for i := range n {
		if errs[i] != nil {
			te := requireCode(t, errs[i], toolgatetype.CodeSpendLimitExceeded)
			assert.Equal(t, []string{"Call would exceed global daily limit of $5.5000"}, te.Violations)
			refused++
			continue
		}
		require.Equal(t, toolgatetype.StatusCompleted, results[i].Execution.Status, "call %d", i)
		completed++
	}
	assert.Equal(t, 50, completed, "5.5000 / 0.1100 calls, no more")
	assert.Equal(t, 150, refused)
	assert.EqualValues(t, 50, c.provider.Calls())
	assertUsed(t, c.stores[1], "alice", "5.5000", "50")
	c.requireUsage(t, quotes[0], storage.Usage{Count: 50, UniqueUsers: 1})
}

// TestGatewaysTakeoverAfterCrash: instance A dies mid-call, leaving its run
// holding the key. B answers "in use" until A's lease runs out, then takes
// the call over and completes it; the call is charged once, and A, back up,
// replays B's result byte for byte.
func TestGatewaysTakeoverAfterCrash(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	p := holdingProvider(func(n int64) {
		if n == 1 { // only A's run blocks
			close(entered)
			<-release
		}
	})
	instances := twoInstances(t)
	a := toolgatetest.NewDyingStore(instances[0])
	c := newCluster(t, []storage.Store{a, instances[1]}, p, nil)
	ctx := t.Context()
	q := c.quote(t, 0, "alice")
	req := echoCall(q, "the-key")

	done := make(chan error, 1)
	go func() {
		_, err := c.gws[0].Call(ctx, "alice", req)
		done <- err
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("A's call ended before reaching the provider: %v", err)
	}
	// While A is running, its live lease holds the key on every instance.
	_, err := c.gws[1].Call(ctx, "alice", req)
	requireCode(t, err, toolgatetype.CodeIdempotencyKeyInUse)
	close(release)
	requireCode(t, <-done, toolgatetype.CodeInternal)
	a.Dying.Store(false) // A is restarted

	// The abandoned run keeps its lease, and its reservation, to the end.
	c.clock.Advance(toolgate.DefaultIdempotencyLease - time.Second)
	_, err = c.gws[1].Call(ctx, "alice", req)
	requireCode(t, err, toolgatetype.CodeIdempotencyKeyInUse)
	assertUsed(t, c.stores[1], "alice", "0.1100", "1")

	c.clock.Advance(2 * time.Second)
	res, err := c.gws[1].Call(ctx, "alice", req)
	require.NoError(t, err)
	assert.False(t, res.Replayed)
	assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	assert.JSONEq(t, `{"value":"hello"}`, string(res.Execution.Output))
	assert.EqualValues(t, 2, c.provider.Calls(), "A's run reached the provider before it died")
	assertUsed(t, c.stores[0], "alice", "0.1100", "1") // charged once, not 0.2200
	c.requireUsage(t, q, storage.Usage{Count: 1, UniqueUsers: 1})

	again, err := c.gws[0].Call(ctx, "alice", req)
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	assert.Equal(t, string(res.Body), string(again.Body), "A replays B's result byte for byte")
	exec, err := c.gws[0].GetExecution(ctx, "alice", res.Execution.ID)
	require.NoError(t, err)
	assert.Equal(t, string(res.Body), string(exec.Body))
	assert.EqualValues(t, 2, c.provider.Calls(), "a replay does not reach the provider")
}
