package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/internal/promshare"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// metricsMaxAge is the oldest reading a scrape is answered with: every
// instance exports the whole fleet's outbox, read from the store, so a
// scrape of each costs the store at most one read per 10 s.
const metricsMaxAge = 10 * time.Second

// eventTypes are the types whose counts are exported from the start, at
// 0 until one is counted: an alert on their increase needs the series to
// exist before the first event fails.
var eventTypes = []string{
	string(toolgatetype.ApprovalRequestCreated), string(toolgatetype.ApprovalRequestDecided),
	string(toolgatetype.ExecutionAmbiguous), string(toolgatetype.BudgetThresholdCrossed),
	string(toolgatetype.BudgetLimitReachedEvent),
}

// metricsTimeout bounds the store read behind one scrape.
const metricsTimeout = 5 * time.Second

// metrics exports the outbox of the store: toolgate_events_pending,
// toolgate_events_oldest_pending_age_seconds, and
// toolgate_events_delivered_total and toolgate_events_failed_total by
// type (a small fixed set). Read from the store, they are the fleet's
// whichever instance is scraped.
type metrics struct {
	log       *slog.Logger
	pending   *prometheus.Desc
	oldestAge *prometheus.Desc
	delivered *prometheus.Desc
	failed    *prometheus.Desc
	stats     *promshare.Reading[storage.EventStats]
}

// RegisterMetrics registers the outbox metrics of store with reg; nothing
// when reg is nil. Gateways sharing a registerer share the first one's
// collector. now tells the time (nil: time.Now); log hears of failed
// reads (nil: discarded).
func RegisterMetrics(reg prometheus.Registerer, store storage.Outbox, now func() time.Time, log *slog.Logger) error {
	if reg == nil {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &metrics{
		log: log,
		stats: &promshare.Reading[storage.EventStats]{
			MaxAge: metricsMaxAge, Timeout: metricsTimeout, Now: now,
			Read: func(ctx context.Context, _ time.Time) (storage.EventStats, error) { return store.EventStats(ctx) },
		},
		pending: prometheus.NewDesc("toolgate_events_pending",
			"Events (webhooks) written and not yet delivered nor failed, across every instance.", nil, nil),
		oldestAge: prometheus.NewDesc("toolgate_events_oldest_pending_age_seconds",
			"Seconds since the oldest pending event was caused, across every instance; 0 when none is pending.", nil, nil),
		delivered: prometheus.NewDesc("toolgate_events_delivered_total",
			"Events delivered (a 2xx from the receiver), by type, across every instance.", []string{"type"}, nil),
		failed: prometheus.NewDesc("toolgate_events_failed_total",
			"Events failed for good (their retry period passed, or the receiver answered 410), by type, across every instance; `toolgate events retry` sends them again.", []string{"type"}, nil),
	}
	var errs []error
	promshare.Register(reg, m, &errs)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("outbox: register metrics: %w", err)
	}
	return nil
}

// Describe sends the metrics' descriptions.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.pending
	ch <- m.oldestAge
	ch <- m.delivered
	ch <- m.failed
}

// Collect sends the outbox as read at most metricsMaxAge ago, the oldest
// pending event's age as of now. A failed read exports nothing.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	st, now, err := m.stats.Get()
	if err != nil {
		// A gap in the series says what is known better than an old value.
		m.log.Warn("event metrics: cannot read the outbox", "error", err)
		return
	}
	age := 0.0
	if st.Pending > 0 && now.After(st.OldestPending) {
		age = now.Sub(st.OldestPending).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(m.oldestAge, prometheus.GaugeValue, age)
	for _, c := range []struct {
		desc   *prometheus.Desc
		counts map[string]int64
	}{{m.delivered, st.Delivered}, {m.failed, st.Failed}} {
		types := append([]string(nil), eventTypes...)
		for typ := range c.counts {
			if !slices.Contains(types, typ) {
				types = append(types, typ)
			}
		}
		sort.Strings(types)
		for _, typ := range types {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.counts[typ]), typ)
		}
	}
}
