// Package promdecimal is a Prometheus counter of money: it sums amounts as
// decimals and exports each sum as the float nearest to it, so that 55
// charges of 0.1000 read 5.5, never the 5.499999999999999 a float counter
// drifts to.
package promdecimal

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
)

// CounterVec is a counter with labels whose series sum decimals exactly.
// Safe for concurrent use. Register it with a registry (promshare.Register
// shares one between gateways: they add to the same sums).
type CounterVec struct {
	desc  *prometheus.Desc
	mu    sync.Mutex
	order []string // label values in first-use order, joined
	sums  map[string]*Counter
}

// NewCounterVec makes a counter named name with the given help and label
// names.
func NewCounterVec(name, help string, labels []string) *CounterVec {
	return &CounterVec{
		desc: prometheus.NewDesc(name, help, labels, nil),
		sums: map[string]*Counter{},
	}
}

// Counter is one series of a CounterVec.
type Counter struct {
	labels []string
	mu     sync.Mutex
	sum    decimal.Decimal
}

// Add adds amount, which must not be negative (a counter only grows).
func (c *Counter) Add(amount decimal.Decimal) {
	if amount.IsNegative() {
		panic("promdecimal: a counter cannot decrease")
	}
	c.mu.Lock()
	c.sum = c.sum.Add(amount)
	c.mu.Unlock()
}

// Sum is what the series has counted, exactly.
func (c *Counter) Sum() decimal.Decimal {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum
}

// WithLabelValues returns the series of these label values, made at zero
// on first use.
func (v *CounterVec) WithLabelValues(values ...string) *Counter {
	key := joinKey(values)
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok := v.sums[key]; ok {
		return c
	}
	c := &Counter{labels: append([]string(nil), values...)}
	v.sums[key] = c
	v.order = append(v.order, key)
	return c
}

// Describe implements prometheus.Collector.
func (v *CounterVec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector: each series' exact sum, as the
// nearest float.
func (v *CounterVec) Collect(ch chan<- prometheus.Metric) {
	v.mu.Lock()
	series := make([]*Counter, 0, len(v.order))
	for _, k := range v.order {
		series = append(series, v.sums[k])
	}
	v.mu.Unlock()
	for _, c := range series {
		ch <- prometheus.MustNewConstMetric(v.desc, prometheus.CounterValue, c.Sum().InexactFloat64(), c.labels...)
	}
}

// joinKey joins label values with a byte no label value holds.
func joinKey(values []string) string {
	n := 0
	for _, s := range values {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	for _, s := range values {
		b = append(b, s...)
		b = append(b, 0xff)
	}
	return string(b)
}
