package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetest"
)

// openWithPool is openInstance with a pool of at most conns connections.
func openWithPool(t *testing.T, schema string, conns int) *postgres.Store {
	t.Helper()
	url := testURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	s, err := postgres.Open(t.Context(), fmt.Sprintf("%s%spool_max_conns=%d", url, sep, conns),
		&postgres.Config{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// One caller cannot hold up another (contract section 28): with alice's
// admission lock held for ten seconds by a transaction outside toolgate and
// six of her calls waiting for it, bob's quote and call answer in their
// usual time, on a pool of four connections (pgxpool's default on two
// CPUs, where six waiting calls used to hold every connection). Alice's
// calls then go on, each run once.
func TestWaitingCallsDoNotHoldUpOtherPrincipals(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openWithPool(t, schema, 4)
	c := newCluster(t, []storage.Store{s}, toolgatetest.NewUpstream(), nil)
	gw := c.gws[0]

	n := 0
	pair := func(principal string) (quote, call time.Duration) {
		t.Helper()
		n++
		start := time.Now()
		q := c.quote(t, 0, principal)
		quote = time.Since(start)
		start = time.Now()
		_, err := gw.Call(ctx, principal, echoCall(q, fmt.Sprintf("%s-%d", principal, n)))
		require.NoError(t, err)
		return quote, time.Since(start)
	}
	// A first call of each creates its lock row; then bob's usual time.
	pair("alice")
	pair("bob")
	var usualQuote, usualCall time.Duration
	for range 5 {
		q, cl := pair("bob")
		usualQuote, usualCall = max(usualQuote, q), max(usualCall, cl)
	}

	// Alice's lock held outside toolgate, and six of her calls.
	outside, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	_, err = outside.Exec(ctx, fmtSchema(`SELECT FROM {schema}.principal_locks WHERE principal = 'alice' FOR UPDATE`, schema))
	require.NoError(t, err)
	// Released after ten seconds, whatever bob's calls do meanwhile.
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(10 * time.Second)
		assert.NoError(t, outside.Rollback(context.Background()))
		released <- time.Now()
	}()

	calls := make([]chan error, 6)
	for i := range calls {
		q := c.quote(t, 0, "alice")
		calls[i] = make(chan error, 1)
		go func() {
			_, err := gw.Call(ctx, "alice", echoCall(q, fmt.Sprintf("alice-waits-%d", i)))
			calls[i] <- err
		}()
	}
	// Their batches give up on the lock after 200 ms and each call goes on
	// alone, waiting; by now every one of them waits.
	time.Sleep(time.Second)

	quote, call := pair("bob")
	last := c.quote(t, 0, "bob") // for the usage, below
	t.Logf("bob's quote %v and call %v with six of alice's calls waiting (usual: %v and %v)",
		quote, call, usualQuote, usualCall)
	assert.Less(t, quote, 2*time.Second, "bob's quote waited for alice's calls")
	assert.Less(t, call, 2*time.Second, "bob's call waited for alice's calls")
	assert.Less(t, quote+call, usualQuote+usualCall+time.Second, "bob's pair took much longer than usual")

	for i := range calls {
		select {
		case err := <-calls[i]:
			t.Errorf("alice's call %d ended while her lock was held: %v", i, err)
			calls[i] <- err
		default:
		}
	}
	at := <-released
	for i := range calls {
		select {
		case err := <-calls[i]:
			require.NoError(t, err, "alice's call %d", i)
		case <-time.After(10 * time.Second):
			t.Fatalf("alice's call %d did not go on once her lock was released", i)
		}
	}
	t.Logf("alice's six calls done %v after her lock was released", time.Since(at))
	// Each call ran once and was charged once: alice's seven and bob's
	// seven.
	c.provider.RequireCalls(t, 14)
	c.requireUsage(t, last, storage.Usage{Count: 14, UniqueUsers: 2})
}
