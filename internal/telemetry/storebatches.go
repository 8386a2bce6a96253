package telemetry

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/promshare"
	"github.com/toolgate/toolgate/storage"
)

// batchSizeBuckets are the sizes a store batch is counted in: one (a lone
// call, sent at once) up to the most a store sends together.
var batchSizeBuckets = []float64{1, 2, 4, 8, 16, 32, 64}

// ObserveStoreBatches exports toolgate_store_batch_size, the batches a
// store that shares its work between concurrent calls reports
// (Store.ObserveBatches), so that operators see how much is shared: a
// histogram of each batch's number of calls, by operation. A store that
// batches nothing reports none and so exports none, and neither does a
// gateway without metrics.
func ObserveStoreBatches(reg prometheus.Registerer, store storage.Store) error {
	if reg == nil {
		return nil
	}
	var errs []error
	sizes := promshare.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "toolgate_store_batch_size",
		Help:    "Calls sent to the store together, per batch, by operation: admit and finish (PostgreSQL: one round trip and one transaction each), write (SQLite: one transaction of the writer). 1 is a call sent alone.",
		Buckets: batchSizeBuckets,
	}, []string{"operation"}), &errs)
	if len(errs) > 0 {
		return fmt.Errorf("toolgate: register metrics: %w", errs[0])
	}
	// Series are made as operations are first seen, so that a store shows
	// only its own (SQLite's writes, PostgreSQL's admissions and finishes).
	var observers sync.Map // operation: prometheus.Observer
	store.ObserveBatches(func(op string, n int) {
		o, ok := observers.Load(op)
		if !ok {
			o, _ = observers.LoadOrStore(op, sizes.WithLabelValues(op))
		}
		o.(prometheus.Observer).Observe(float64(n))
	})
	return nil
}
