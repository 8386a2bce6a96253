package storage

// BatchObserver is the part of Store that reports how a store shares the
// database's work between concurrent calls.
type BatchObserver interface {
	// ObserveBatches makes observe hear, from now on, the size of every
	// batch the store sends (one round trip or one transaction for the
	// writes waiting at the same moment), by operation ("quote", "admit",
	// "finish" or, for a store with one writer, "write"), so that operators see how
	// much is shared (toolgate_store_batch_size). A lone call is a batch
	// of one. observe must be cheap and safe for concurrent use; a later
	// call replaces an earlier one's observe. A store that sends no
	// batches (the memory store) says so in its documentation and never
	// calls observe.
	ObserveBatches(observe func(operation string, size int))
}
