package upstream

import (
	"context"
	"sync"
	"time"
)

// breaker fails calls fast to an upstream that keeps failing, so that calls
// do not pile up behind a dead provider, each holding a reservation and a
// lease until its deadline. After a cool-down it lets one trial call
// through; a success closes it again.
//
// One caller cannot switch a tool off for others (contract section 28): a
// failure its own input may have caused (the provider answered, with an
// error status and a body saying why, or with 429) counts against that
// caller alone, and after threshold of them in a row holds back only that
// caller, for the cool-down. The origin's circuit opens for everyone only
// when threshold failures in a row come from at least two principals, or
// include a failure that is clearly the provider's: the connection refused
// or broken, no answer in time, a 5xx with no body.
type breaker struct {
	clock     Clock
	threshold int
	cooldown  time.Duration

	mu    sync.Mutex
	hosts map[string]*breakerState
}

// breakerState is one origin's: its circuit for everyone, and the callers
// its own failures hold back.
type breakerState struct {
	all circuit
	// seen is the principals of the failures in a row, up to two: two open
	// the circuit for everyone.
	seen []string
	// provider is whether those failures include one that is clearly the
	// provider's.
	provider bool
	// callers is each principal's own circuit, while it has failures in a
	// row; at most maxHeldCallers.
	callers map[string]*circuit
}

// circuit is consecutive failures and, once they reach the threshold, a
// circuit open until a time.
type circuit struct {
	failures  int       // consecutive failures
	open      bool      // failures reached the threshold
	openUntil time.Time // calls fail fast before this
	trial     bool      // a half-open trial call is under way
}

// maxHeldCallers bounds the principals an origin remembers failures of.
// Past it, a new principal's failures count only towards the circuit of
// everyone, which still needs two principals or the provider's own fault.
const maxHeldCallers = 4096

// outcome is what a call to an origin came to, for the breaker.
type outcome int

const (
	succeeded outcome = iota
	// callerFailed: the provider answered with a failure that the caller's
	// input may have caused.
	callerFailed
	// providerFailed: a failure that is clearly the provider's.
	providerFailed
)

func newBreaker(clock Clock, threshold int, cooldown time.Duration) *breaker {
	return &breaker{clock: clock, threshold: threshold, cooldown: cooldown, hosts: map[string]*breakerState{}}
}

// allow reports whether principal's call to origin may go ahead, and when
// not, until when it is held back and whether the circuit is open for
// everyone or for principal alone.
func (b *breaker) allow(origin, principal string) (ok bool, until time.Time, everyone bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.hosts[origin]
	if s == nil {
		return true, time.Time{}, false
	}
	now := b.clock.Now()
	if s.all.open {
		ok, until := s.all.allow(now, b.cooldown)
		return ok, until, true
	}
	if c := s.callers[principal]; c != nil && c.open {
		ok, until := c.allow(now, b.cooldown)
		return ok, until, false
	}
	return true, time.Time{}, false
}

// allow is allow for one open circuit: fail fast until openUntil, then
// let one trial through.
func (c *circuit) allow(now time.Time, cooldown time.Duration) (bool, time.Time) {
	if now.Before(c.openUntil) {
		return false, c.openUntil
	}
	if c.trial {
		return false, now.Add(cooldown)
	}
	c.trial = true // half-open: one call tests the upstream
	return true, time.Time{}
}

// record notes the outcome of principal's call to origin, and reports
// whether the origin's circuit is open for everyone after it.
func (b *breaker) record(origin, principal string, o outcome) (open bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.hosts[origin]
	if o == succeeded {
		if s == nil {
			return false
		}
		// The provider works: the failures in a row end, and this
		// caller's own with them.
		s.all, s.seen, s.provider = circuit{}, nil, false
		delete(s.callers, principal)
		if len(s.callers) == 0 {
			delete(b.hosts, origin)
		}
		return false
	}
	if s == nil {
		s = &breakerState{callers: map[string]*circuit{}}
		b.hosts[origin] = s
	}
	now := b.clock.Now()
	if o == providerFailed {
		s.provider = true
	}
	if len(s.seen) < 2 && (len(s.seen) == 0 || s.seen[0] != principal) {
		s.seen = append(s.seen, principal)
	}
	if s.all.fail(now, b.threshold, b.cooldown, s.provider || len(s.seen) >= 2) {
		return true
	}
	c := s.callers[principal]
	if c == nil {
		if len(s.callers) >= maxHeldCallers {
			s.forgetClosed(now)
		}
		if len(s.callers) >= maxHeldCallers {
			return false
		}
		c = &circuit{}
		s.callers[principal] = c
	}
	c.fail(now, b.threshold, b.cooldown, true)
	return false
}

// fail counts a failure, and opens the circuit when failures reach the
// threshold and may open it. It reports whether the circuit is open.
func (c *circuit) fail(now time.Time, threshold int, cooldown time.Duration, mayOpen bool) bool {
	c.failures++
	c.trial = false
	if c.failures >= threshold && mayOpen {
		c.open = true
		c.openUntil = now.Add(cooldown)
	}
	return c.open
}

// forgetClosed drops the callers whose circuits are not holding them back
// now, to make room.
func (s *breakerState) forgetClosed(now time.Time) {
	for p, c := range s.callers {
		if !c.open || !now.Before(c.openUntil) {
			delete(s.callers, p)
		}
	}
}

// principalKey carries the principal a request is sent for.
type principalKey struct{}

// WithPrincipal returns ctx carrying the principal on whose behalf the
// requests sent with it go, so that failures only that principal sees
// hold back only that principal (see Client.Do).
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

func principalOf(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}
