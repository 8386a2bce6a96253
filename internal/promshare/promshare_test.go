package promshare

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegister(t *testing.T) {
	t.Parallel()
	counter := func(help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toolgate_things_total", Help: help}, labels)
	}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "toolgate_things_total", Help: "Things."}, []string{"kind"})
	for _, tc := range []struct {
		name   string
		second prometheus.Collector
		// register registers second with its own type, as callers do.
		register   func(reg prometheus.Registerer, errs *[]error) prometheus.Collector
		shared     bool // the second registration returns the first collector
		registered bool // ...or its own, registered
		fails      bool
	}{
		{name: "the same metric again is the one registered first", second: counter("Things.", "kind"), shared: true},
		{name: "another metric is registered beside it", second: prometheus.NewCounter(prometheus.CounterOpts{Name: "toolgate_other_total", Help: "Other."}), registered: true},
		{name: "the same name with other labels fails", second: counter("Things.", "tool"), fails: true},
		{name: "the same name with other help fails", second: counter("Other things.", "kind"), fails: true},
		{name: "the same description as another type fails", second: gauge, register: func(reg prometheus.Registerer, errs *[]error) prometheus.Collector {
			return Register(reg, gauge, errs)
		}, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			var errs []error
			first := Register(reg, counter("Things.", "kind"), &errs)
			require.Empty(t, errs)
			first.WithLabelValues("a").Inc()

			var got prometheus.Collector
			if tc.register != nil {
				got = tc.register(reg, &errs)
			} else {
				got = Register(reg, tc.second, &errs)
			}
			switch {
			case tc.shared:
				require.Empty(t, errs)
				assert.Same(t, first, got)
				got.(*prometheus.CounterVec).WithLabelValues("a").Inc()
				assert.Equal(t, 2.0, testutil.ToFloat64(first.WithLabelValues("a")), "both add to one series")
			case tc.registered:
				require.Empty(t, errs)
				assert.Same(t, tc.second, got)
				n, err := testutil.GatherAndCount(reg)
				require.NoError(t, err)
				assert.Equal(t, 2, n)
			case tc.fails:
				require.Len(t, errs, 1)
				assert.Same(t, tc.second, got, "returned, unregistered")
				n, err := testutil.GatherAndCount(reg)
				require.NoError(t, err)
				assert.Equal(t, 1, n, "only the first is registered")
			}
		})
	}
}
