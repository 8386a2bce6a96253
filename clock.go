package toolgate

import "time"

// Clock tells the gateway the time. Quote expiry, idempotency leases, spend
// windows and rate limits all read it, so tests can drive them with a fake
// clock (toolgatetest.FakeClock) instead of sleeping.
type Clock interface {
	Now() time.Time
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
