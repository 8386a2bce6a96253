package postgres

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// waiting is how a Store keeps the calls that wait for a lock off the
// connections other principals need (contract section 28: one caller
// cannot hold up another). A call waits for a lock when its batch gave up
// on one after lockWait (see batchSettings) or a takeover finds its
// principal's lock held: by another instance's admission, or by any
// transaction outside toolgate. Such a call used to wait on a connection
// of the pool for as long as it took, so six calls of one principal
// behind a lock held for ten seconds held every connection of a pool of
// four, and every other principal's quote waited as long.
//
// Now such a call waits in three ways that each hold a connection for a
// bounded time only:
//
//   - its principal's turn (in this process, on no connection): the calls
//     of one principal that wait take turns, since each needs the
//     principal's admission lock and only one could hold it at a time
//     anyway. The others wait on the turn, not on a connection;
//   - a room: at most half the pool's connections (at least one) are held
//     by waiting calls at once, whatever their principals, so that the
//     other half serves fresh work (quotes, reads, the batches);
//   - each attempt waits for no lock longer than lockWait, then lets go of
//     its room and its connection, and takes its place again at the back
//     of the rooms' queue: calls of several principals waiting for locks
//     held elsewhere share the rooms, and one that is not stuck (its
//     batch failed beside a stuck one) soon has its turn.
//
// Exactness is untouched: an attempt that gave up wrote nothing (its
// transaction rolled back, as a failed batch's does), and the attempt that
// succeeds runs the statements a call alone always ran, under the same
// database locks. No limit is measured without the principal's lock, and a
// key is still claimed by one insert.
//
// A call that waits gives up only when its caller's context ends; it then
// wrote nothing, and its caller gets the context's error.
type waiting struct {
	turns turns
	rooms chan struct{}
}

// newWaiting returns the waiting of a Store whose pool holds at most
// conns connections.
func newWaiting(conns int) *waiting {
	return &waiting{turns: turns{m: map[string]*turn{}}, rooms: make(chan struct{}, max(1, conns/2))}
}

// busy reports whether a call of principal waits for a lock on this Store
// now: a new call of the principal would wait behind it anyway, and sent
// in a batch it would hold up the batch's other calls for lockWait.
func (w *waiting) busy(principal string) bool { return w.turns.busy(principal) }

// attempt is one try at a call that may wait for a lock: it waits for no
// lock longer than lockWait, and reports again when it gave up on one.
type attempt func(ctx context.Context) (again bool)

// wait runs try, in principal's turn and a room, until it does not ask to
// go again or ctx ends.
func (w *waiting) wait(ctx context.Context, principal string, try attempt) error {
	release, err := w.turns.wait(ctx, principal)
	if err != nil {
		return err
	}
	defer release()
	for {
		select {
		case w.rooms <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		again := try(ctx)
		<-w.rooms
		if !again {
			return nil
		}
		// A breath before the next try, so that a lock that is held long
		// is not asked for in a tight loop; the try itself waited lockWait.
		pause := time.NewTimer(retryPause + rand.N(retryPause))
		select {
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			return ctx.Err()
		}
	}
}

// retryPause is the least time between two tries of a waiting call.
const retryPause = 20 * time.Millisecond

// turns is a turn per key: whose call goes next, for the calls of one
// principal that take turns (the sealed writes of its receipt chain, the
// calls that wait for its lock).
type turns struct {
	mu sync.Mutex
	m  map[string]*turn // keys with a holder or waiters
}

// turn is one key's turn: a one-slot channel, so that a caller can stop
// waiting when its context ends. refs counts its holder and waiters; the
// last one out deletes it.
type turn struct {
	slot chan struct{}
	refs int
}

// wait takes key's turn, waiting for the callers before it, and returns
// the function that gives it back.
func (ts *turns) wait(ctx context.Context, key string) (release func(), err error) {
	ts.mu.Lock()
	t, ok := ts.m[key]
	if !ok {
		t = &turn{slot: make(chan struct{}, 1)}
		ts.m[key] = t
	}
	t.refs++
	ts.mu.Unlock()
	select {
	case t.slot <- struct{}{}:
		return func() {
			<-t.slot
			ts.leave(key, t)
		}, nil
	case <-ctx.Done():
		ts.leave(key, t)
		return nil, ctx.Err()
	}
}

func (ts *turns) leave(key string, t *turn) {
	ts.mu.Lock()
	if t.refs--; t.refs == 0 {
		delete(ts.m, key)
	}
	ts.mu.Unlock()
}

// busy reports whether key's turn is held or waited for.
func (ts *turns) busy(key string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	_, ok := ts.m[key]
	return ok
}
