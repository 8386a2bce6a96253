package memory

import (
	"slices"
	"sort"
	"time"
)

// timeQueue keeps keys ordered by a time so that pruning can walk the oldest
// entries first and stop early, and limit checks can jump straight to the
// start of a window instead of scanning all history.
type timeQueue[K any] struct {
	items []timed[K]
}

type timed[K any] struct {
	at  time.Time
	key K
}

// push inserts key at its place in time order. Callers pass roughly
// increasing times, so the insertion point is almost always the end and the
// binary search only matters for stragglers.
func (q *timeQueue[K]) push(at time.Time, key K) {
	i := sort.Search(len(q.items), func(i int) bool { return q.items[i].at.After(at) })
	q.items = slices.Insert(q.items, i, timed[K]{at: at, key: key})
}

// since returns the entries at or after t. The slice aliases the queue and is
// only valid while the store's mutex is held.
func (q *timeQueue[K]) since(t time.Time) []timed[K] {
	i := sort.Search(len(q.items), func(i int) bool { return !q.items[i].at.Before(t) })
	return q.items[i:]
}

// verdict is what drain does with one entry.
type verdict uint8

const (
	drop verdict = iota // remove the entry and count it
	keep                // leave it in place and walk on
	stop                // leave it and everything after it
)

// drain walks entries older than before, oldest first, and removes those
// judge says to drop, stopping after limit drops or at the first stop.
// Kept entries stay in order. It returns how many were dropped.
func (q *timeQueue[K]) drain(before time.Time, limit int, judge func(K) verdict) int {
	var (
		n    int
		kept int // survivors are compacted into items[:kept]
		i    int
	)
	for ; i < len(q.items) && n < limit && q.items[i].at.Before(before); i++ {
		v := judge(q.items[i].key)
		if v == stop {
			break
		}
		if v == drop {
			n++
			continue
		}
		q.items[kept] = q.items[i]
		kept++
	}
	if n == 0 {
		return 0
	}
	// Slide the survivors up against the unvisited tail instead of moving
	// the tail down, so the work stays proportional to what was walked.
	start := i - kept
	copy(q.items[start:i], q.items[:kept])
	clear(q.items[:start]) // let dropped keys be collected
	q.items = q.items[start:]
	q.shrink()
	return n
}

// shrink gives memory back once most of the backing array is unused;
// reslicing from the front alone would keep the peak array alive.
func (q *timeQueue[K]) shrink() {
	switch {
	case len(q.items) == 0:
		q.items = nil
	case cap(q.items) > 64 && len(q.items) < cap(q.items)/4:
		q.items = slices.Clone(q.items)
	}
}

func (q *timeQueue[K]) len() int { return len(q.items) }

// move puts key, queued at from, at to instead. Keys queued at the same
// time are few, so the walk from the first of them is short.
func move[K comparable](q *timeQueue[K], key K, from, to time.Time) {
	i := sort.Search(len(q.items), func(i int) bool { return !q.items[i].at.Before(from) })
	for ; i < len(q.items) && q.items[i].at.Equal(from); i++ {
		if q.items[i].key == key {
			q.items = slices.Delete(q.items, i, i+1)
			break
		}
	}
	q.push(to, key)
}
