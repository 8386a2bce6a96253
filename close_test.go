package toolgate_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage/memory"
)

// A server shutting down closes the gateway before its webhook sender and
// store: Close waits for the budget check in flight, so the alert it finds
// is delivered rather than lost with the sender; and a call after Close
// starts no check.
func TestCloseWaitsForTheBudgetChecksInFlight(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	sender := hooks.sender(t)
	store := &summaryStore{Store: memory.New(), gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	team := searchTeam()
	team.Alerts = []float64{0.1}
	e := newEnvWithStore(t, store, []toolSpec{pricedAt("1.0000")}, withBudgets(sender, team))

	e.charge("alice", "1.0000")
	<-store.entered // the check that will find 10 % reached is running
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- e.gw.Close(ctx)
	}()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a budget check was running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(store.gate)
	require.NoError(t, <-closed)

	e.charge("bob", "1.0000")
	assert.Equal(t, int64(1), store.summaries.Load(), "a charge after Close starts no check")
	got := hooks.settled(t, sender)
	require.Len(t, got, 1, "the alert of the check Close waited for is delivered")
	assert.Equal(t, threshold(0.1, "1.0000", t0.In(berlin)), got[0].Data)
}

// Close waits no longer than its context: a check stuck in the store is
// given up, and Close says so.
func TestCloseGivesUpAtTheDeadline(t *testing.T) {
	t.Parallel()
	sender := newHookReceiver(t).sender(t)
	store := &summaryStore{Store: memory.New(), gate: make(chan struct{}), entered: make(chan struct{}, 10)}
	t.Cleanup(func() { close(store.gate) })
	e := newEnvWithStore(t, store, []toolSpec{pricedAt("1.0000")}, withBudgets(sender, searchTeam()))

	e.charge("alice", "1.0000")
	<-store.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := e.gw.Close(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}

// A gateway without budgets has nothing to wait for, and Close may be
// called again.
func TestCloseWithoutBudgets(t *testing.T) {
	t.Parallel()
	e := newEnvWithStore(t, memory.New(), []toolSpec{pricedAt("1.0000")})
	require.NoError(t, e.gw.Close(context.Background()))
	require.NoError(t, e.gw.Close(context.Background()))
}
