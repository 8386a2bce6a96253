package loadtest

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Bounds of a run's phases.
const (
	// callersExitTimeout bounds the wait for callers after the window: one
	// call's whole retry budget and a margin.
	callersExitTimeout = callBudget + 30*time.Second
	resolveWorkers     = 16
	rssEvery           = time.Second
)

// runOptions shape one phase of load.
type runOptions struct {
	window time.Duration
	// signalAfter, when not zero, calls onSignal that long into the window,
	// which ends it there: onSignal must stop the callers.
	signalAfter time.Duration
	onSignal    func()
	// quietAtEnd ends the upstreams' faults when the window closes, so
	// that hangs still pending answer at once (see the package doc).
	quietAtEnd bool
}

// runResult is what a phase of load made.
type runResult struct {
	start time.Time
	calls []*call
	rss   []rssSample
}

// run starts the callers against srv, samples srv's memory while the window
// is open, and returns once every caller is done.
func (l *load) run(srv *server, o runOptions) runResult {
	t := l.r.t
	t.Helper()
	start := time.Now()
	end := start.Add(o.window)
	stopRSS := sampleRSS(srv.pid(), start, o.window)

	results := make([][]*call, l.r.set.callers)
	var wg sync.WaitGroup
	for i := range l.r.set.callers {
		wg.Go(func() { results[i] = l.caller(i, end) })
	}
	if o.signalAfter > 0 {
		time.Sleep(time.Until(start.Add(o.signalAfter)))
		o.onSignal() // the callers stop: the window is over
	} else {
		time.Sleep(time.Until(end))
	}
	rss := stopRSS()
	if o.quietAtEnd {
		l.r.providers.quiet()
		l.r.goal.quiet()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(callersExitTimeout):
		t.Fatalf("callers still running %s after the window closed", callersExitTimeout)
	}
	res := runResult{start: start, rss: rss}
	for _, calls := range results {
		res.calls = append(res.calls, calls...)
	}
	return res
}

// resolve sends again, with the same key and body, every call that has no
// definitive answer yet (its last attempt met a transport error or a 409),
// as a client that outlived the load would, so that every key that may
// have run has a known execution.
func (l *load) resolve(calls []*call) {
	var pending []*call
	for _, c := range calls {
		if !c.resolved {
			pending = append(pending, c)
		}
	}
	l.parallel(pending, func(worker int, c *call, rng *rand.Rand) {
		l.callUntilAnswered(c, l.r.patient, rng, time.Now().Add(callBudget), func() bool { return false })
	})
	for _, c := range pending {
		if !c.resolved {
			l.stats.problem("key %s never got a definitive answer after %d attempts: last %s", c.key, c.attempts, c.last)
		}
	}
}

// parallel runs f over calls with a few workers, each with its own
// generator.
func (l *load) parallel(calls []*call, f func(worker int, c *call, rng *rand.Rand)) {
	work := make(chan *call)
	var wg sync.WaitGroup
	for w := range resolveWorkers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(l.r.set.seed, uint64(w)+1<<40))
			for c := range work {
				f(w, c, rng)
			}
		})
	}
	for _, c := range calls {
		work <- c
	}
	close(work)
	wg.Wait()
}

// rssSample is the server's resident set at some time into the window.
type rssSample struct {
	at  time.Duration
	kib int64
}

// sampleRSS reads pid's resident set every second from start, for at most
// the window (and a few samples more); stop ends it and returns the samples.
func sampleRSS(pid int, start time.Time, window time.Duration) (stop func() []rssSample) {
	quit := make(chan struct{})
	done := make(chan []rssSample, 1)
	go func() {
		var out []rssSample
		ticker := time.NewTicker(rssEvery)
		defer ticker.Stop()
		for n := 0; n <= int(window/rssEvery)+5; n++ {
			kib, err := readRSS(pid)
			if err != nil {
				break // the process is gone
			}
			out = append(out, rssSample{at: time.Since(start), kib: kib})
			select {
			case <-quit:
				done <- out
				return
			case <-ticker.C:
			}
		}
		<-quit
		done <- out
	}()
	return func() []rssSample {
		close(quit)
		return <-done
	}
}
