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

// webhooks parses "webhooks": {"retryFor": "24h"}.
func (p *configParser) webhooks(n node) (Webhooks, error) {
	fs, err := n.fields("retryFor")
	if err != nil {
		return Webhooks{}, err
	}
	var w Webhooks
	for _, f := range fs {
		switch f.name {
		case "retryFor":
			if w.RetryFor, err = f.duration(); err == nil && (w.RetryFor < time.Minute || w.RetryFor > maxRetryFor) {
				err = f.errorf("%s is outside 1m to 744h: an event is retried for at least a minute and at most a month", w.RetryFor)
			}
		}
		if err != nil {
			return Webhooks{}, err
		}
	}
	return w, nil
}
