package ruling

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/internal/promshare"
	"github.com/toolgate/toolgate/rules"
)

// errorLogEvery is how often at most a rule that keeps failing is
// logged: once is enough to be fixed, and every call would flood the log.
const errorLogEvery = time.Minute

// Observer counts the rules' matches and errors, and logs the errors.
// A nil *Observer observes nothing.
type Observer struct {
	matches *prometheus.CounterVec
	errors  *prometheus.CounterVec
	log     *slog.Logger
	now     func() time.Time

	mu     sync.Mutex
	logged map[string]time.Time // rule -> when its error was last logged
}

// NewObserver registers the rules' metrics with reg (nil: none) and logs
// to log.
func NewObserver(reg prometheus.Registerer, log *slog.Logger, now func() time.Time) (*Observer, error) {
	o := &Observer{log: log, now: now, logged: map[string]time.Time{}}
	if reg == nil {
		return o, nil
	}
	var errs []error
	o.matches = promshare.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_rule_matches_total",
		Help: "Calls, quotes and listings a rule of the organization's matched (or, failing, counted as matching), by rule, effect and mode.",
	}, []string{"rule", "effect", "mode"}), &errs)
	o.errors = promshare.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_rule_errors_total",
		Help: "Evaluations of a rule that failed while running (a missing key, the cost limit), each counted as a match.",
	}, []string{"rule"}), &errs)
	return o, errors.Join(errs...)
}

// Saw records matches: counted, and a failure logged once a minute at
// most per rule. Pending matches decided nothing and are not counted.
func (o *Observer) Saw(ctx context.Context, ms []rules.Match) {
	if o == nil {
		return
	}
	for i := range ms {
		m := &ms[i]
		if m.Pending {
			continue
		}
		if o.matches != nil {
			o.matches.WithLabelValues(m.Name, string(m.Effect), string(m.Mode)).Inc()
		}
		if m.Err == nil {
			continue
		}
		if o.errors != nil {
			o.errors.WithLabelValues(m.Name).Inc()
		}
		if o.due(m.Name) {
			o.log.WarnContext(ctx, "rule failed while running and counts as matching (fail closed); guard the keys it reads with has()",
				"rule", m.Name, "effect", string(m.Effect), "error", m.Err.Error())
		}
	}
}

// due reports whether rule's failure is to be logged now.
func (o *Observer) due(rule string) bool {
	now := o.now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if last, ok := o.logged[rule]; ok && now.Sub(last) < errorLogEvery {
		return false
	}
	o.logged[rule] = now
	return true
}
