package storage

import (
	"context"
	"time"
)

// WindowCounter is the part of Store that counts events in time windows,
// for limits every process sharing the store enforces together: failed
// sign-ins per client address, approval requests per principal.
//
// A key's window begins with the first event counted under it when it has
// no window, or when its window has ended, and lasts the Window that event
// gives; every event counted under the key before the window ends adds
// one to it. A window's count thus says how many events came since it
// began, and its End when a limit on it lets up.
type WindowCounter interface {
	// CountEvent counts one event under each of e.Keys and returns each
	// key's window after it, in the order of e.Keys. Concurrent events
	// under one key, from any number of processes, are each counted once.
	// It may forget windows that have ended.
	CountEvent(ctx context.Context, e WindowEvent) ([]Window, error)
	// Windows returns the window each of keys is in at now, in order: the
	// zero Window for a key whose window has ended or that has none. It
	// writes nothing, and reflects every event counted before it began.
	Windows(ctx context.Context, keys []string, now time.Time) ([]Window, error)
}

// WindowEvent is the input of WindowCounter.CountEvent.
type WindowEvent struct {
	// Keys name the windows the event counts in; each at most
	// MaxWindowKeyLength bytes.
	Keys []string
	// Window is the length of a window the event begins.
	Window time.Duration
	Now    time.Time
}

// Window is one key's count of events since its window began.
type Window struct {
	Count int64
	Start time.Time
	End   time.Time
}

// MaxWindowKeyLength is the longest key a WindowCounter must keep.
const MaxWindowKeyLength = 300

// Live reports whether w is a window that has not ended at now.
func (w Window) Live(now time.Time) bool { return w.Count > 0 && now.Before(w.End) }
