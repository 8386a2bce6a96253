package memory

import (
	"context"

	"github.com/toolgate/toolgate/storage"
)

// ReadBatch does r method by method (storage.ReadEach): each costs no
// more than a lock, so nothing is gained by doing them together.
func (s *Store) ReadBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	return storage.ReadEach(ctx, s, r)
}

// AdmitCall reads, decides and begins in turn (storage.AdmitEach): its
// reads are always the store's state at the time.
func (s *Store) AdmitCall(ctx context.Context, r storage.Reads, decide func(storage.ReadResult) (storage.Begin, error)) (storage.BeginResult, error) {
	return storage.AdmitEach(ctx, s, r, decide)
}

// ObserveBatches does nothing: the memory store sends no batches, each
// call's step being one critical section of its own, so observe is never
// called and a gateway on it shows no batch sizes.
func (s *Store) ObserveBatches(func(operation string, size int)) {}
