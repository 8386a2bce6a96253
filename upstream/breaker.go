package upstream

import (
	"sync"
	"time"
)

// breaker fails calls fast to an upstream that keeps failing, so that calls
// do not pile up behind a dead provider, each holding a reservation and a
// lease until its deadline. After a cool-down it lets one trial call
// through; a success closes it again.
type breaker struct {
	clock     Clock
	threshold int
	cooldown  time.Duration

	mu    sync.Mutex
	hosts map[string]*breakerState
}

type breakerState struct {
	failures  int       // consecutive failures
	openUntil time.Time // calls fail fast before this
	trial     bool      // a half-open trial call is under way
}

func newBreaker(clock Clock, threshold int, cooldown time.Duration) *breaker {
	return &breaker{clock: clock, threshold: threshold, cooldown: cooldown, hosts: map[string]*breakerState{}}
}

// allow reports whether a call to origin may go ahead, and when not, until
// when the breaker stays open.
func (b *breaker) allow(origin string) (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.hosts[origin]
	if s == nil || s.failures < b.threshold {
		return true, time.Time{}
	}
	now := b.clock.Now()
	if now.Before(s.openUntil) {
		return false, s.openUntil
	}
	if s.trial {
		return false, now.Add(b.cooldown)
	}
	s.trial = true // half-open: one call tests the upstream
	return true, time.Time{}
}

// record notes the outcome of a call to origin, and reports whether the
// origin's circuit is open after it: failures reached the threshold, and
// no call has succeeded since.
func (b *breaker) record(origin string, ok bool) (open bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.hosts[origin]
	if ok {
		if s != nil {
			delete(b.hosts, origin)
		}
		return false
	}
	if s == nil {
		s = &breakerState{}
		b.hosts[origin] = s
	}
	s.failures++
	s.trial = false
	if s.failures >= b.threshold {
		s.openUntil = b.clock.Now().Add(b.cooldown)
		return true
	}
	return false
}
