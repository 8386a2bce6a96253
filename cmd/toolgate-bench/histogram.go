package main

import (
	"math/bits"
	"time"
)

// histogram counts latencies in buckets about 3% wide, so that a phase of
// millions of requests keeps the same few kilobytes: the load tool's own
// memory must not grow under the process whose memory it reports.
type histogram struct {
	n       uint64
	buckets [64 << subBits]uint64
}

// subBits is how many bits after the leading one tell buckets apart.
const subBits = 5

// bucket returns the bucket of d: its bit length, then the subBits bits
// below its leading one.
func bucket(d time.Duration) int {
	v := uint64(max(d, 0))
	n := bits.Len64(v)
	if n <= subBits {
		return int(v) // exact below 2^subBits
	}
	return n<<subBits | int(v>>(n-1-subBits))&(1<<subBits-1)
}

// upper is the largest duration that falls in bucket b.
func upper(b int) time.Duration {
	n, sub := b>>subBits, uint64(b&(1<<subBits-1))
	if n <= subBits {
		return time.Duration(b)
	}
	return time.Duration((1<<subBits|sub+1)<<(n-1-subBits) - 1)
}

func (h *histogram) add(d time.Duration) {
	h.n++
	h.buckets[bucket(d)]++
}

func (h *histogram) merge(o *histogram) {
	h.n += o.n
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
}

// percentile is the upper end of the bucket holding the q-th fraction of
// the durations added, or 0 when there are none.
func (h *histogram) percentile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if rank >= h.n {
		rank = h.n - 1
	}
	var seen uint64
	for b, c := range h.buckets {
		seen += c
		if seen > rank {
			return upper(b)
		}
	}
	return 0
}
