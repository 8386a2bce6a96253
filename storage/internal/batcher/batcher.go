// Package batcher shares a store's round trips between concurrent callers,
// the way River's batch completer shares its completions: an item that
// arrives while there is room for another batch in flight is sent at
// once, alone, so a lone caller never waits for company; items that arrive
// while the batches in flight fill the room wait for one of them to end
// and then go together, as the next batch. The batch forms while the ones
// before are in flight, so it costs a waiting item at most one batch's
// time, and the busier the store, the larger the batches and the fewer the
// round trips, commits and wake-ups per item.
package batcher

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Run sends one batch and returns one result per item, in the items'
// order. ctx ends only when every caller of the batch has given up.
type Run[T, R any] func(ctx context.Context, items []T) []R

// Failed is the result each item of a batch gets when Run panics or
// returns a result count other than the items': the batch's other callers
// are answered, and the Batcher goes on sending.
type Failed[R any] func(err error) R

// Batcher sends the items given to Do in batches.
type Batcher[T, R any] struct {
	run    Run[T, R]
	failed Failed[R]
	// max is the most items one batch holds; the rest wait for the next.
	max int
	// inflight is the most batches sent at once. More than one keeps a
	// batch that waits (for a lock another process holds, say) from
	// holding up every item behind it.
	inflight int
	// key, when set, keeps two items with one key out of one batch: the
	// second waits for the next, and sees what the first did.
	key func(T) string
	// observe, when set, is told each batch's size.
	observe atomic.Pointer[func(int)]

	mu      sync.Mutex
	sending int           // batches in flight
	queue   []*call[T, R] // waiting for the next batch, in arrival order
}

// call is one item waiting for, or in, a batch.
type call[T, R any] struct {
	ctx    context.Context
	item   T
	taken  bool          // in a batch (under Batcher.mu)
	done   chan struct{} // closed once result is set
	result R
}

// New returns a Batcher that sends batches of at most size items with run,
// at most inflight at once. key, when not nil, names an item's key: items
// with one key never share a batch. failed makes the result of an item
// whose batch went wrong (see Failed).
func New[T, R any](size, inflight int, key func(T) string, run Run[T, R], failed Failed[R]) *Batcher[T, R] {
	return &Batcher[T, R]{run: run, failed: failed, max: max(size, 1), inflight: max(inflight, 1), key: key}
}

// Observe makes observe hear the size of every batch sent from now on.
func (b *Batcher[T, R]) Observe(observe func(size int)) {
	b.observe.Store(&observe)
}

// Do sends item, alone when no batch is in flight and in the next batch
// otherwise, and returns its result. When ctx ends first, Do returns ctx's
// error: an item still waiting is then never sent, and one already sent
// may have taken effect, as a round trip cut short may have.
func (b *Batcher[T, R]) Do(ctx context.Context, item T) (R, error) {
	c := &call[T, R]{ctx: ctx, item: item, done: make(chan struct{})}
	b.mu.Lock()
	if b.sending < b.inflight {
		// Room for a batch, so nothing queued: send it now, on this
		// goroutine, which then hands what queued meanwhile to the next.
		b.sending++
		c.taken = true
		b.mu.Unlock()
		b.send([]*call[T, R]{c})
		return c.result, nil
	}
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.result, nil
	case <-ctx.Done():
		b.mu.Lock()
		if !c.taken {
			b.remove(c)
			b.mu.Unlock()
			var zero R
			return zero, ctx.Err()
		}
		b.mu.Unlock()
		// Sent already: its result may have taken effect, and is the
		// caller's if it arrives in the meantime.
		select {
		case <-c.done:
			return c.result, nil
		default:
			var zero R
			return zero, ctx.Err()
		}
	}
}

// remove takes c out of the queue. b.mu is held.
func (b *Batcher[T, R]) remove(c *call[T, R]) {
	for i, q := range b.queue {
		if q == c {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return
		}
	}
}

// send runs batch, hands out its results, and then sends whatever queued
// meanwhile, on a goroutine of its own so that this caller returns.
func (b *Batcher[T, R]) send(batch []*call[T, R]) {
	if o := b.observe.Load(); o != nil {
		(*o)(len(batch))
	}
	items := make([]T, len(batch))
	for i, c := range batch {
		items[i] = c.item
	}
	results := b.runSafely(batch, items)
	for i, c := range batch {
		c.result = results[i]
		close(c.done)
	}
	if next := b.next(); next != nil {
		go b.send(next)
	}
}

// runSafely runs items, and answers every one with failed when run
// panics or miscounts: a panic on the goroutine that sends the next batch
// would end the process, and one on a caller's would leave the Batcher
// counting a batch in flight forever.
func (b *Batcher[T, R]) runSafely(batch []*call[T, R], items []T) (results []R) {
	ctx, cancel := batchContext(batch)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			results = b.failAll(len(items), fmt.Errorf("batcher: a batch of %d panicked: %v", len(items), p))
		}
	}()
	results = b.run(ctx, items)
	if len(results) != len(items) {
		return b.failAll(len(items), fmt.Errorf("batcher: a batch of %d gave %d results", len(items), len(results)))
	}
	return results
}

func (b *Batcher[T, R]) failAll(n int, err error) []R {
	out := make([]R, n)
	for i := range out {
		out[i] = b.failed(err)
	}
	return out
}

// next takes the next batch off the queue, or marks one batch fewer in
// flight when the queue is empty.
func (b *Batcher[T, R]) next() []*call[T, R] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.sending--
		return nil
	}
	var batch, rest []*call[T, R]
	var keys map[string]struct{}
	for _, c := range b.queue {
		if len(batch) == b.max {
			rest = append(rest, c)
			continue
		}
		if b.key != nil {
			k := b.key(c.item)
			if _, dup := keys[k]; dup {
				rest = append(rest, c)
				continue
			}
			if keys == nil {
				keys = map[string]struct{}{}
			}
			keys[k] = struct{}{}
		}
		c.taken = true
		batch = append(batch, c)
	}
	b.queue = rest
	return batch
}

// batchContext is the context a batch runs with: not any one caller's,
// since one giving up must not fail the others, but ended once all of
// them have given up, when nobody waits for the answer.
func batchContext[T, R any](batch []*call[T, R]) (context.Context, context.CancelFunc) {
	if len(batch) == 1 {
		return context.WithCancel(batch[0].ctx)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var waiting atomic.Int64
	waiting.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, c := range batch {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// Pending reports how many batches are in flight and how many items wait
// for the next, for tests that need a batch to form.
func (b *Batcher[T, R]) Pending() (inflight, queued int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sending, len(b.queue)
}
