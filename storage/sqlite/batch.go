package sqlite

import (
	"context"

	"github.com/toolgate/toolgate/storage"
)

// ReadBatch does r method by method (storage.ReadEach): the reads go to
// the read pool in this process, where a round trip costs nothing to save.
func (s *Store) ReadBatch(ctx context.Context, r storage.Reads) (storage.ReadResult, error) {
	return storage.ReadEach(ctx, s, r)
}

// AdmitCall reads, decides and begins in turn (storage.AdmitEach): its
// reads are always the database's at the time.
func (s *Store) AdmitCall(ctx context.Context, r storage.Reads, decide func(storage.ReadResult) (storage.Begin, error)) (storage.BeginResult, error) {
	return storage.AdmitEach(ctx, s, r, decide)
}
