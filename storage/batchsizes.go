package storage

// BatchObserver is an optional Store method for a store that shares the
// database's work between concurrent calls (one round trip or one
// transaction for the writes waiting at the same moment): observe hears
// the size of every batch it sends from now on, by operation ("admit",
// "finish" or, for a store with one writer, "write"), so that operators
// see how much is shared (toolgate_store_batch_size). A lone call is a
// batch of one. observe must be cheap and safe for concurrent use; a
// later call replaces an earlier one's observe.
type BatchObserver interface {
	ObserveBatches(observe func(operation string, size int))
}
