package toolgatetest

import (
	"context"
	"sync/atomic"

	"github.com/toolgate/toolgate/storage"
)

// DyingStore is a store that never records the end of a call while Dying
// is set, the way a gateway process killed mid-call never does: the call's
// Idempotency-Key stays claimed and its amount reserved until a retry takes
// the call over once its lease has ended. Every other method is the
// wrapped store's.
type DyingStore struct {
	storage.Store
	// Dying makes FinishExecution fail, recording nothing.
	Dying atomic.Bool
}

// NewDyingStore wraps store, dying from the start.
func NewDyingStore(store storage.Store) *DyingStore {
	s := &DyingStore{Store: store}
	s.Dying.Store(true)
	return s
}

// FinishExecution is the wrapped store's, unless the store is dying.
func (s *DyingStore) FinishExecution(ctx context.Context, f storage.Finish) error {
	if s.Dying.Load() {
		return context.Canceled
	}
	return s.Store.FinishExecution(ctx, f)
}
