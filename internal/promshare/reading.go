package promshare

import (
	"context"
	"sync"
	"time"
)

// Reading keeps a value read from the store for the metrics of the whole
// fleet, which every instance exports: a scrape is answered with the last
// reading while it is at most MaxAge old, so that scrapes of every
// instance cost the store at most one read each MaxAge, and concurrent
// scrapes share one read. A failed read is kept as no reading: the next
// scrape reads again.
type Reading[T any] struct {
	MaxAge  time.Duration
	Timeout time.Duration // bounds one read
	Now     func() time.Time
	Read    func(ctx context.Context, now time.Time) (T, error)

	mu     sync.Mutex
	ok     bool
	readAt time.Time
	value  T
}

// Get returns the reading, fresh enough, and the time of the scrape; err
// when the store could not be read.
func (r *Reading[T]) Get() (value T, now time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now = r.Now()
	if r.ok && !now.Before(r.readAt) && now.Sub(r.readAt) < r.MaxAge {
		return r.value, now, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.Timeout)
	defer cancel()
	value, err = r.Read(ctx, now)
	r.ok = err == nil
	if err != nil {
		var zero T
		return zero, now, err
	}
	r.readAt, r.value = now, value
	return value, now, nil
}
