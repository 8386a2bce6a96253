package main

import (
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/toolgate/toolgate/storage"
)

// batchSizes adds up the batches a store that shares its work between
// concurrent calls reports (Store.ObserveBatches), by operation, so the
// report shows how much was shared.
type batchSizes struct {
	mu  sync.Mutex
	ops map[string]*batchCount
}

type batchCount struct{ batches, calls, largest int }

// observeBatches returns the sizes st reports from now on: none from a
// store that batches nothing.
func observeBatches(st storage.Store) *batchSizes {
	b := &batchSizes{ops: map[string]*batchCount{}}
	st.ObserveBatches(func(op string, n int) {
		b.mu.Lock()
		defer b.mu.Unlock()
		c := b.ops[op]
		if c == nil {
			c = &batchCount{}
			b.ops[op] = c
		}
		c.batches++
		c.calls += n
		c.largest = max(c.largest, n)
	})
	return b
}

// report writes one line per operation: its calls, its batches, their
// mean and largest size.
func (b *batchSizes) report(out io.Writer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ops := make([]string, 0, len(b.ops))
	for op := range b.ops {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	for _, op := range ops {
		c := b.ops[op]
		fmt.Fprintf(out, "store batches, %-7s %8d calls in %7d batches: %.2f per batch, at most %d (warm-up included)\n",
			op+":", c.calls, c.batches, float64(c.calls)/float64(c.batches), c.largest)
	}
}
