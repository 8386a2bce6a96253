package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/internal/promshare"
	"github.com/toolgate/toolgate/storage"
)

// ambiguousMetricsMaxAge is the oldest reading a scrape is answered with,
// for the reason budgetMetricsMaxAge gives: every instance exports the
// fleet's number.
const ambiguousMetricsMaxAge = 10 * time.Second

// ambiguousMetricsTimeout bounds the store read behind one scrape.
const ambiguousMetricsTimeout = 5 * time.Second

// ambiguousMetrics exports how many ambiguous calls wait for a person to
// resolve them (toolgate_ambiguous_calls_waiting) and how long the oldest
// has waited (toolgate_ambiguous_oldest_age_seconds), read from the store
// so that every instance shows the whole fleet's. No labels: which calls
// they are is for a person to look up (README, "When nobody knows whether
// a call ran"), and a label per principal or tool would make a series of
// each.
type ambiguousMetrics struct {
	log       *slog.Logger
	waiting   *prometheus.Desc
	oldestAge *prometheus.Desc
	reading   *promshare.Reading[ambiguousWaiting]
}

// ambiguousWaiting is how many ambiguous calls wait, and since when the
// oldest (zero when none waits).
type ambiguousWaiting struct {
	n      int64
	oldest time.Time
}

// RegisterAmbiguous registers the ambiguous metrics with reg when there
// is one. A store that cannot count what waits
// (storage.ErrUnsupported) makes them export nothing.
// Gateways sharing a registerer share the first one's collector: each
// reads the whole fleet's number from the store anyway.
func RegisterAmbiguous(reg prometheus.Registerer, store storage.Store, now func() time.Time, log *slog.Logger) error {
	if reg == nil {
		return nil
	}
	m := &ambiguousMetrics{
		log: log,
		reading: &promshare.Reading[ambiguousWaiting]{
			MaxAge: ambiguousMetricsMaxAge, Timeout: ambiguousMetricsTimeout, Now: now,
			Read: func(ctx context.Context, _ time.Time) (ambiguousWaiting, error) {
				n, oldest, err := store.AmbiguousWaiting(ctx)
				return ambiguousWaiting{n, oldest}, err
			},
		},
		waiting: prometheus.NewDesc("toolgate_ambiguous_calls_waiting",
			"Calls whose outcome nobody knows (status ambiguous) that no person has resolved yet, across every instance.",
			nil, nil),
		oldestAge: prometheus.NewDesc("toolgate_ambiguous_oldest_age_seconds",
			"Seconds since the oldest unresolved ambiguous call was admitted, across every instance; 0 when none waits.",
			nil, nil),
	}
	var errs []error
	promshare.Register(reg, m, &errs)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("toolgate: register ambiguous call metrics: %w", err)
	}
	return nil
}

// Describe sends the two metrics' descriptions.
func (m *ambiguousMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.waiting
	ch <- m.oldestAge
}

// Collect sends the number waiting, as read at most ambiguousMetricsMaxAge
// ago, and the oldest's age now: the age keeps growing between reads.
func (m *ambiguousMetrics) Collect(ch chan<- prometheus.Metric) {
	w, now, err := m.reading.Get()
	switch {
	case errors.Is(err, storage.ErrUnsupported):
		// A store that cannot count what waits said so: no failure to log.
		return
	case err != nil:
		// A gap in the series says what is known better than an old value.
		m.log.Warn("ambiguous call metrics: cannot count the calls waiting", "error", err)
		return
	}
	age := 0.0
	if w.n > 0 && now.After(w.oldest) {
		age = now.Sub(w.oldest).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(m.waiting, prometheus.GaugeValue, float64(w.n))
	ch <- prometheus.MustNewConstMetric(m.oldestAge, prometheus.GaugeValue, age)
}
