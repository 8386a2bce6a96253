// Package outbox delivers the events of a store's outbox (storage.Outbox):
// every event the gateway writes with its cause is sent from there, at
// least once, by whichever process on the store claims it first.
//
// A Deliverer claims the events that are due, under a lease, sends each
// with its Sender (package webhook's signs and POSTs them), in parallel up
// to a bound, and records each attempt in the store: delivered; failed, to
// be tried again after a backoff (the first retry within seconds, the
// waits doubling to at most 5 minutes); or failed for good, once its retry
// period (24 hours by default) has passed or the receiver refused it for
// good. A failed event is kept, counted and listed, and RetryEvents makes
// it pending again. Nothing is queued in memory: a process that dies with
// events leased loses nothing, as their leases lapse and another claim
// takes them over, and a flood of events waits in the store, not in a
// bounded queue that would drop the ones that do not fit.
//
// Delivery never runs on a request's goroutine: a slow or failing receiver
// never delays or fails the request that caused an event. Wake tells a
// Deliverer that an event was just written, so that it need not wait for
// its next poll.
package outbox

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// Defaults of Config fields left zero.
const (
	DefaultRetryFor = 24 * time.Hour
	DefaultLease    = 30 * time.Second
	DefaultParallel = 8
	DefaultPoll     = time.Second
	// MaxBackoff is the longest wait between two attempts of an event.
	MaxBackoff = 5 * time.Minute
)

// Sender sends one event. A nil error is a delivery; an error wrapped by
// Permanent fails the event for good (a receiver that answered 410 Gone);
// any other error is retried. An error may carry how long the receiver
// asked to be left alone (RetryAfter).
type Sender interface {
	Send(ctx context.Context, e storage.Event) error
}

// Config holds a Deliverer's optional settings. A nil *Config, and every
// zero field, means the default.
type Config struct {
	// RetryFor is how long an event is retried before it is failed for
	// good, from its creation (or from the RetryEvents that made it
	// pending again). Default 24 hours.
	RetryFor time.Duration
	// Backoff is the wait after an event's n-th failed attempt (n from 1);
	// nil means 2 s doubling with each attempt, up to a quarter less by
	// jitter, at most MaxBackoff: the first retry within 2 s, so a
	// receiver that comes back hears within minutes.
	Backoff func(n int) time.Duration
	// Lease is how long a claim holds an event: longer than a Send can
	// take (webhook's sender gives up after 15 s). Default 30 s.
	Lease time.Duration
	// Parallel bounds the events sent at once by this Deliverer. Default 8.
	Parallel int
	// Poll is how often the store is asked for due events when nothing
	// woke the Deliverer: how soon an event written by another process,
	// or due for a retry, is sent. Default 1 s.
	Poll time.Duration
	// Now tells the time; nil means time.Now. Tests drive it.
	Now func() time.Time
	// Logger receives what happens to events: WARN for a budget alert (a
	// person should hear of it even where no receiver is configured) and
	// an event failed for good, INFO for a failed attempt. Nil discards.
	// Payloads are never logged.
	Logger *slog.Logger
}

// Deliverer sends a store's events. Safe for concurrent use.
type Deliverer struct {
	store  storage.Outbox
	sender Sender
	cfg    Config

	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	start   sync.Once
	closing sync.Once
	// cancel ends the attempts in progress when Close's deadline passes.
	base   context.Context
	cancel context.CancelFunc
}

// New returns a Deliverer of store's events through sender. Start starts
// it; DeliverDue runs one pass by hand.
func New(store storage.Outbox, sender Sender, cfg *Config) *Deliverer {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.RetryFor <= 0 {
		c.RetryFor = DefaultRetryFor
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.Parallel <= 0 {
		c.Parallel = DefaultParallel
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	base, cancel := context.WithCancel(context.Background())
	return &Deliverer{
		store: store, sender: sender, cfg: c,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		base: base, cancel: cancel,
	}
}

// Start runs the Deliverer in the background until Close.
func (d *Deliverer) Start() {
	d.start.Do(func() { go d.run() })
}

// Wake tells the Deliverer an event was written: it looks for due events
// now rather than at its next poll. It never blocks.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Close stops the Deliverer: no attempt starts after it, and it returns
// once the attempts in progress have been recorded, or when ctx is done,
// cancelling them (their events stay leased until the lease lapses, then
// are claimed again). Events not yet sent stay in the store for the next
// Deliverer.
func (d *Deliverer) Close(ctx context.Context) {
	d.closing.Do(func() { close(d.stop) })
	d.start.Do(func() { close(d.done) }) // never started: nothing to wait for
	select {
	case <-d.done:
	case <-ctx.Done():
		d.cancel()
		<-d.done
	}
	d.cancel()
}

// run delivers until Close: a pass whenever woken or polled, and at once
// again while a pass found a full page, so that a backlog drains at the
// speed of the receiver.
func (d *Deliverer) run() {
	defer close(d.done)
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-d.wake:
		case <-t.C:
		}
		for {
			n, err := d.DeliverDue(d.base)
			if err != nil {
				d.cfg.Logger.Warn("events: cannot claim events to deliver; trying again", "error", err)
				break
			}
			if n < d.cfg.Parallel {
				break
			}
			select {
			case <-d.stop:
				return
			default:
			}
		}
	}
}

// DeliverDue claims up to Parallel due events, sends them at once, and
// records each attempt; it returns how many it claimed. Tests call it
// with a fake Now to walk an event through its schedule.
func (d *Deliverer) DeliverDue(ctx context.Context) (int, error) {
	events, err := d.store.ClaimEvents(ctx, storage.ClaimEvents{Now: d.cfg.Now(), Lease: d.cfg.Lease, Limit: d.cfg.Parallel})
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, e := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.attempt(ctx, e)
		}()
	}
	wg.Wait()
	return len(events), nil
}

// attempt sends one claimed event and records how it went.
func (d *Deliverer) attempt(ctx context.Context, e storage.Event) {
	sendCtx, cancel := context.WithTimeout(ctx, d.cfg.Lease)
	err := d.sender.Send(sendCtx, e)
	cancel()
	now := d.cfg.Now()
	a := storage.EventAttempt{ID: e.ID, LeaseToken: e.LeaseToken, Now: now}
	log := d.cfg.Logger.With("event", e.ID, "type", e.Type, "attempt", e.Attempts)
	switch {
	case err == nil:
		a.Status = storage.EventDelivered
	case errors.Is(err, errPermanent):
		a.Status, a.LastError = storage.EventFailed, errText(err)
	default:
		a.Status, a.LastError = storage.EventPending, errText(err)
		a.RetryAt = d.retryAt(e, now, err)
		if !a.RetryAt.After(now) {
			a.Status = storage.EventFailed
		}
	}
	if ctx.Err() != nil && err != nil {
		// Closing cut the attempt short: it says nothing of the receiver.
		// The lease lapses and a later claim sends the event again.
		return
	}
	if rerr := d.store.EventAttempted(context.WithoutCancel(ctx), a); rerr != nil {
		if errors.Is(rerr, storage.ErrLeaseLost) {
			log.Info("events: an attempt outlived its lease; another claim has the event")
			return
		}
		log.Warn("events: cannot record an attempt; the event is sent again when its lease lapses", "error", rerr)
		return
	}
	switch a.Status {
	case storage.EventDelivered:
		if e.Attempts == 1 {
			d.firstSeen(e)
		}
	case storage.EventFailed:
		log.Warn("events: event failed for good; kept, and sent again by toolgate events retry", "error", a.LastError)
	default:
		if e.Attempts == 1 {
			d.firstSeen(e)
		}
		log.Info("events: delivery failed; will retry", "error", a.LastError, "retryAt", a.RetryAt.UTC())
	}
}

// firstSeen logs an event on its first attempt, once per event across
// the fleet: a budget's at WARN, naming the budget and window (from its id,
// "budget.threshold:<budget>:<window>:..."), so that the log says what the
// webhook says; any other at INFO.
func (d *Deliverer) firstSeen(e storage.Event) {
	kind, rest, _ := strings.Cut(e.ID, ":")
	budget, rest, _ := strings.Cut(rest, ":")
	window, _, _ := strings.Cut(rest, ":")
	switch kind {
	case "budget.threshold":
		d.cfg.Logger.Warn("budget threshold crossed", "budget", budget, "window", window, "event", e.ID)
	case "budget.limit_reached":
		d.cfg.Logger.Warn("budget limit reached: calls are refused", "budget", budget, "window", window, "event", e.ID)
	default:
		d.cfg.Logger.Info("event", "event", e.ID, "type", e.Type)
	}
}

// retryAt is when a failed event is tried next: after the backoff of its
// attempt, or the receiver's Retry-After when later (up to MaxBackoff),
// and never past its retry period's end, where it gets one last attempt;
// now (and so failed for good) when that end has passed.
func (d *Deliverer) retryAt(e storage.Event, now time.Time, err error) time.Time {
	end := e.RetryingSince.Add(d.cfg.RetryFor)
	if !now.Before(end) {
		return now
	}
	wait := d.cfg.Backoff(max(e.Attempts, 1))
	if wait <= 0 {
		wait = time.Second // a Backoff of its own that overflowed
	}
	var ra *retryAfterError
	if errors.As(err, &ra) && ra.wait > wait {
		wait = min(ra.wait, MaxBackoff)
	}
	at := now.Add(wait)
	if at.After(end) {
		at = end
	}
	return at
}

// DefaultBackoff waits 2 s, 4 s, 8 s... after attempts 1, 2, 3..., up to a
// quarter less by jitter, at most MaxBackoff.
func DefaultBackoff(n int) time.Duration {
	wait := MaxBackoff
	if n < 20 {
		wait = min(2*time.Second<<(n-1), MaxBackoff)
	}
	jitter, err := rand.Int(rand.Reader, big.NewInt(int64(wait/4)+1))
	if err != nil {
		return wait
	}
	return wait - time.Duration(jitter.Int64())
}

var errPermanent = errors.New("refused for good")

// Permanent marks err as one that retrying cannot fix: the event fails for
// good at once.
func Permanent(err error) error { return &permanentError{err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() []error      { return []error{e.err, errPermanent} }
func (e *permanentError) Is(target error) bool { return target == errPermanent }

// RetryAfter marks err as a failure after which the receiver asked to be
// left alone for wait: the next attempt waits that long when it is more
// than the backoff.
func RetryAfter(err error, wait time.Duration) error { return &retryAfterError{err, wait} }

type retryAfterError struct {
	err  error
	wait time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// errText is an error as an event keeps it: at most
// storage.MaxEventErrorLength bytes.
func errText(err error) string {
	s := err.Error()
	if len(s) > storage.MaxEventErrorLength {
		s = strings.ToValidUTF8(s[:storage.MaxEventErrorLength], "")
	}
	return s
}

// LogOnly is a Sender that delivers every event to the log alone: for a
// gateway with no receiver, so that its budget alerts are still WARN lines
// (the Deliverer logs each event on its first attempt) and its outbox
// does not grow.
type LogOnly struct{}

// Send delivers e at once.
func (LogOnly) Send(context.Context, storage.Event) error { return nil }
