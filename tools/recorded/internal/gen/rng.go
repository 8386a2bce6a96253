package gen

import "math"

// rng is a small deterministic random source (SplitMix64) with the few
// draws the generator needs. The data sets depend on its exact sequence,
// so it is written here rather than taken from math/rand, whose
// algorithms a Go release may change.
type rng struct{ state uint64 }

func newRNG(seed uint64) *rng { return &rng{state: seed} }

func (r *rng) uint64() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Float64 is uniform in [0, 1).
func (r *rng) Float64() float64 { return float64(r.uint64()>>11) / (1 << 53) }

// IntN is uniform in [0, n); the modulo bias is far below what matters here.
func (r *rng) IntN(n int) int { return int(r.uint64() % uint64(n)) }

// Int64N is uniform in [0, n).
func (r *rng) Int64N(n int64) int64 { return int64(r.uint64() % uint64(n)) }

// NormFloat64 is standard normal (the Box-Muller transform).
func (r *rng) NormFloat64() float64 {
	u := 1 - r.Float64() // in (0, 1]
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.Float64())
}

// ExpFloat64 is exponential with rate 1.
func (r *rng) ExpFloat64() float64 { return -math.Log(1 - r.Float64()) }
