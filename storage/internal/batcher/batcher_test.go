package batcher

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gate is a Run that records each batch and holds it until released.
type gate struct {
	mu      sync.Mutex
	batches [][]string
	started chan struct{}
	release chan struct{}
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 100), release: make(chan struct{}, 100)}
}

func (g *gate) run(ctx context.Context, items []string) []string {
	g.mu.Lock()
	g.batches = append(g.batches, append([]string(nil), items...))
	g.mu.Unlock()
	g.started <- struct{}{}
	<-g.release
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = "done " + it
	}
	return out
}

func (g *gate) sent() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]string(nil), g.batches...)
}

// queued reports how many items wait for a batch.
func (b *Batcher[T, R]) queued() int {
	_, n := b.Pending()
	return n
}

func waitQueued[T, R any](t *testing.T, b *Batcher[T, R], n int) {
	t.Helper()
	require.Eventually(t, func() bool { return b.queued() == n }, 5*time.Second, time.Millisecond)
}

// A lone item is sent at once, alone; items arriving while it is in flight
// go together as the next batch, each with its own result, in order.
func TestLoneItemGoesAtOnceAndWaitingItemsTogether(t *testing.T) {
	g := newGate()
	b := New(10, 1, nil, g.run, failedString)
	var sizes []int
	var mu sync.Mutex
	b.Observe(func(n int) { mu.Lock(); sizes = append(sizes, n); mu.Unlock() })

	results := make(chan string, 4)
	go func() { r, _ := b.Do(t.Context(), "a"); results <- r }()
	<-g.started // a is in flight, alone
	for i, it := range []string{"b", "c", "d"} {
		go func() { r, _ := b.Do(t.Context(), it); results <- r }()
		waitQueued(t, b, i+1)
	}
	g.release <- struct{}{} // a returns; b, c, d go together
	<-g.started
	g.release <- struct{}{}
	got := map[string]bool{}
	for range 4 {
		got[<-results] = true
	}
	assert.Equal(t, map[string]bool{"done a": true, "done b": true, "done c": true, "done d": true}, got)
	assert.Equal(t, [][]string{{"a"}, {"b", "c", "d"}}, g.sent())
	assert.Equal(t, []int{1, 3}, sizes)
}

// Two items with one key never share a batch: the second waits for the next.
func TestOneKeyNeverTwiceInABatch(t *testing.T) {
	g := newGate()
	b := New(10, 1, func(s string) string { return s[:1] }, g.run, failedString)
	done := make(chan struct{}, 4)
	for i, it := range []string{"x0", "k1", "k2", "y3"} {
		go func() { _, _ = b.Do(t.Context(), it); done <- struct{}{} }()
		if i == 0 {
			<-g.started
		} else {
			waitQueued(t, b, i)
		}
	}
	g.release <- struct{}{}
	<-g.started
	g.release <- struct{}{}
	<-g.started
	g.release <- struct{}{}
	for range 4 {
		<-done
	}
	assert.Equal(t, [][]string{{"x0"}, {"k1", "y3"}, {"k2"}}, g.sent())
}

// A batch holds at most its size; the rest go in the next.
func TestBatchHoldsAtMostItsSize(t *testing.T) {
	g := newGate()
	b := New(2, 1, nil, g.run, failedString)
	done := make(chan struct{}, 4)
	for i, it := range []string{"a", "b", "c", "d"} {
		go func() { _, _ = b.Do(t.Context(), it); done <- struct{}{} }()
		if i == 0 {
			<-g.started
		} else {
			waitQueued(t, b, i)
		}
	}
	for range 3 {
		g.release <- struct{}{}
		if len(g.sent()) < 3 {
			<-g.started
		}
	}
	for range 4 {
		<-done
	}
	assert.Equal(t, [][]string{{"a"}, {"b", "c"}, {"d"}}, g.sent())
}

// With room for two batches in flight, a second lone item goes at once
// beside a first that waits.
func TestSecondBatchGoesBesideAWaitingOne(t *testing.T) {
	g := newGate()
	b := New(10, 2, nil, g.run, failedString)
	go func() { _, _ = b.Do(t.Context(), "slow") }()
	<-g.started
	second := make(chan string, 1)
	go func() { r, _ := b.Do(t.Context(), "quick"); second <- r }()
	<-g.started // sent without waiting for "slow"
	g.release <- struct{}{}
	g.release <- struct{}{}
	assert.Equal(t, "done quick", <-second)
}

// An item whose caller gives up while it waits is never sent.
func TestGivenUpWhileWaitingIsNeverSent(t *testing.T) {
	g := newGate()
	b := New(10, 1, nil, g.run, failedString)
	go func() { _, _ = b.Do(t.Context(), "a") }()
	<-g.started
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() { _, err := b.Do(ctx, "abandoned"); gaveUp <- err }()
	waitQueued(t, b, 1)
	cancel()
	assert.True(t, errors.Is(<-gaveUp, context.Canceled))
	assert.Equal(t, 0, b.queued())
	g.release <- struct{}{}
	// Nothing more is sent: the batcher is idle again, and a new item
	// goes at once.
	go func() { _, _ = b.Do(t.Context(), "b") }()
	<-g.started
	g.release <- struct{}{}
	assert.Equal(t, [][]string{{"a"}, {"b"}}, g.sent())
}

func failedString(err error) string { return "failed: " + err.Error() }

// A batch that panics answers each of its callers with a failure, and the
// Batcher goes on: the next item is sent.
func TestPanicFailsItsBatchOnly(t *testing.T) {
	b := New(4, 1, nil, func(_ context.Context, items []int) []string {
		if items[0] == 0 {
			panic("boom")
		}
		return []string{"ok"}
	}, failedString)
	got, err := b.Do(t.Context(), 0)
	require.NoError(t, err)
	assert.Contains(t, got, "panicked: boom")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	got, err = b.Do(ctx, 1)
	require.NoError(t, err, "a later item is sent once the panicking batch has ended")
	assert.Equal(t, "ok", got)
}

// A batch that answers for fewer items than it held fails them all rather
// than leaving one without an answer.
func TestMiscountFailsTheBatch(t *testing.T) {
	b := New(4, 1, nil, func(_ context.Context, items []int) []string { return nil }, failedString)
	got, err := b.Do(t.Context(), 7)
	require.NoError(t, err)
	assert.Contains(t, got, "gave 0 results")
}
