package toolgate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// TestConcurrentCallsWithOneKeyReachUpstreamOnce fires 100 identical calls
// at once. Exactly one reaches the provider; every other one gets the stored
// result or is told the key is busy, and the charge is taken once.
func TestConcurrentCallsWithOneKeyReachUpstreamOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable})
	// Hold the upstream a moment so the racers overlap the running call.
	e.upstream.HandleFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		toolgatetest.EchoProvider(w, r)
	})
	ctx := context.Background()
	q := e.quote("alice", "paid")
	req := approvedCall(q, "one-key", "hello")

	const n = 100
	var wg sync.WaitGroup
	bodies := make([][]byte, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			res, err := e.gw.Call(ctx, "alice", req)
			errs[i] = err
			if err == nil {
				bodies[i] = res.Body
			}
		}(i)
	}
	close(start)
	wg.Wait()

	assert.EqualValues(t, 1, e.upstream.Calls())
	final, err := e.gw.Call(ctx, "alice", req)
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			requireCode(t, errs[i], toolgatetype.CodeIdempotencyKeyInUse)
			continue
		}
		assert.Equal(t, final.Body, bodies[i])
	}
	assertSpent(t, e, "alice", "0.1100")
}

// TestConcurrentSpendNeverExceedsBudget fires 200 paid calls at once against
// a daily budget that fits exactly 50 of them.
func TestConcurrentSpendNeverExceedsBudget(t *testing.T) {
	t.Parallel()
	controls := toolgatetype.StaticSpendControls{"alice": {
		DailyLimitUSD: dec("5.5000"), RateLimitPerMinute: ptr(1000),
	}}
	e := newEnv(t, []toolSpec{paidCallable}, func(c *toolgate.Config) { c.SpendControls = controls })
	ctx := context.Background()

	const n = 200
	quotes := make([]*toolgatetype.QuoteResult, n)
	for i := range quotes {
		quotes[i] = e.quote("alice", "paid")
	}
	var wg sync.WaitGroup
	results := make(chan error, n)
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			res, err := e.gw.Call(ctx, "alice", approvedCall(quotes[i], fmt.Sprintf("k%d", i), "hi"))
			if err == nil && res.Execution.Status != toolgatetype.StatusCompleted {
				err = errors.New("execution " + string(res.Execution.Status))
			}
			results <- err
		}(i)
	}
	close(start)
	wg.Wait()
	close(results)

	completed, refused := 0, 0
	for err := range results {
		if err == nil {
			completed++
			continue
		}
		te := requireCode(t, err, toolgatetype.CodeSpendLimitExceeded)
		assert.Equal(t, []string{"Call would exceed global daily limit of $5.5000"}, te.Violations)
		refused++
	}
	assert.Equal(t, 50, completed)
	assert.Equal(t, 150, refused)
	assertSpent(t, e, "alice", "5.5000")
	assert.EqualValues(t, 50, e.upstream.Calls())

	u, err := e.store.Usage(ctx, quotes[0].Tool.ID)
	require.NoError(t, err)
	assert.Equal(t, storage.Usage{Count: 50, UniqueUsers: 1}, u)
}
