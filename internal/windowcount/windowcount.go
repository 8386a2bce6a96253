// Package windowcount counts events in time windows in this process's
// memory: a storage.WindowCounter for a store that has none, and for the
// memory store.
package windowcount

import (
	"context"
	"sync"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// sweepEvery is how many new windows begin between two sweeps of the
// windows that have ended, so that memory grows with the keys of one
// window's length, not with every key ever counted.
const sweepEvery = 1024

// Memory is a storage.WindowCounter in memory. The zero value is ready to
// use; it is safe for concurrent use.
type Memory struct {
	mu      sync.Mutex
	windows map[string]storage.Window
	begun   int // windows begun since the last sweep
}

// Interface guard.
var _ storage.WindowCounter = (*Memory)(nil)

// CountEvent implements storage.WindowCounter.
func (m *Memory) CountEvent(ctx context.Context, e storage.WindowEvent) ([]storage.Window, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]storage.Window, len(e.Keys))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.windows == nil {
		m.windows = map[string]storage.Window{}
	}
	for i, k := range e.Keys {
		w := m.windows[k]
		if w.Live(e.Now) {
			w.Count++
		} else {
			w = storage.Window{Count: 1, Start: e.Now, End: e.Now.Add(e.Window)}
			m.begun++
		}
		m.windows[k] = w
		out[i] = w
	}
	if m.begun >= sweepEvery {
		m.begun = 0
		for k, w := range m.windows {
			if !w.Live(e.Now) {
				delete(m.windows, k)
			}
		}
	}
	return out, nil
}

// Windows implements storage.WindowCounter.
func (m *Memory) Windows(ctx context.Context, keys []string, now time.Time) ([]storage.Window, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]storage.Window, len(keys))
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range keys {
		if w := m.windows[k]; w.Live(now) {
			out[i] = w
		}
	}
	return out, nil
}
