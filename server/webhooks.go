package server

import (
	"time"
)

// Webhooks is the config's "webhooks": how the events of the store's
// outbox are delivered, by every instance on the store.
type Webhooks struct {
	// RetryFor is how long an event is retried before it is failed for
	// good (kept, listed and resendable with toolgate events retry);
	// 0: the default, 24 hours.
	RetryFor time.Duration
}

// maxRetryFor bounds webhooks.retryFor: past a month an event's cause is
// history, and pending events are never pruned.
const maxRetryFor = 31 * 24 * time.Hour

// webhooksJSON is "webhooks": {"retryFor": "24h"}.
type webhooksJSON struct {
	RetryFor *duration `json:"retryFor"`
}

func (in *webhooksJSON) webhooks(path string) (Webhooks, error) {
	w := Webhooks{RetryFor: in.RetryFor.value()}
	if in.RetryFor != nil && (w.RetryFor < time.Minute || w.RetryFor > maxRetryFor) {
		return Webhooks{}, errorf(at(path, "retryFor"), "%s is outside 1m to 744h: an event is retried for at least a minute and at most a month", w.RetryFor)
	}
	return w, nil
}
