package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/promshare"
	"github.com/toolgate/toolgate/internal/spendlimits"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetMetricsMaxAge is the oldest reading a scrape is answered with: a
// scrape after it reads the store again. Every instance exports the whole
// fleet's use, so scraping many instances often must not read the store
// as often.
const budgetMetricsMaxAge = 10 * time.Second

// budgetMetricsTimeout bounds the store read behind one scrape.
const budgetMetricsTimeout = 5 * time.Second

// budgetMetrics exports each budget window's use and limit
// (toolgate_budget_used_usd, toolgate_budget_limit_usd), read from the
// store so that every instance shows the fleet's use, the way GET
// /v1/budgets does: charged calls plus amounts held by calls in flight or
// ambiguous. Its labels are the budget's id and the window; no principal.
type budgetMetrics struct {
	store       storage.Store
	nodes       func() []*budgets.Node // those in force
	log         *slog.Logger
	used, limit *prometheus.Desc
	reading     *promshare.Reading[[]budgetReading]
}

// budgetReading is one window's use.
type budgetReading struct {
	budget      string
	window      toolgatetype.BudgetWindowKind
	used, limit decimal.Decimal
}

// RegisterBudgets registers the metrics of the windows of the budgets
// nodes returns at each reading with reg; none when reg is nil. Gateways sharing a registerer share the first one's
// collector: each reads the whole fleet's use from the store anyway.
func RegisterBudgets(reg prometheus.Registerer, store storage.Store, nodes func() []*budgets.Node, now func() time.Time, log *slog.Logger) error {
	if reg == nil {
		return nil
	}
	labels := []string{"budget", "window"}
	m := &budgetMetrics{
		store: store, nodes: nodes, log: log,
		used: prometheus.NewDesc("toolgate_budget_used_usd",
			"US dollars used in a budget's window (daily, weekly, monthly) across every instance: charged calls plus amounts held by calls in flight or ambiguous. Only windows with a limit.",
			labels, nil),
		limit: prometheus.NewDesc("toolgate_budget_limit_usd",
			"The limit in US dollars of a budget's window (daily, weekly, monthly).",
			labels, nil),
	}
	m.reading = &promshare.Reading[[]budgetReading]{
		MaxAge: budgetMetricsMaxAge, Timeout: budgetMetricsTimeout, Now: now, Read: m.measure,
	}
	var errs []error
	promshare.Register(reg, m, &errs)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("register budget metrics: %w", err)
	}
	return nil
}

// Describe sends the two metrics' descriptions.
func (m *budgetMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.used
	ch <- m.limit
}

// Collect sends each window's use and limit, as read at most
// budgetMetricsMaxAge ago.
func (m *budgetMetrics) Collect(ch chan<- prometheus.Metric) {
	reading, _, err := m.reading.Get()
	if err != nil {
		// A gap in the series says what is known better than an old value.
		m.log.Warn("budget metrics: cannot read the budgets' use", "error", err)
		return
	}
	for _, r := range reading {
		ch <- prometheus.MustNewConstMetric(m.used, prometheus.GaugeValue, r.used.InexactFloat64(), r.budget, string(r.window))
		ch <- prometheus.MustNewConstMetric(m.limit, prometheus.GaugeValue, r.limit.InexactFloat64(), r.budget, string(r.window))
	}
}

// measure reads every budget window's use at now in one MeasureLimits,
// with the limits GET /v1/budgets measures, so that both show one number.
func (m *budgetMetrics) measure(ctx context.Context, now time.Time) ([]budgetReading, error) {
	windows := spendlimits.BudgetWindows(m.nodes(), now.UTC())
	reading := make([]budgetReading, 0, len(windows))
	limits := make([]storage.Limit, 0, len(windows))
	for _, w := range windows {
		limits = append(limits, w.Limit)
		reading = append(reading, budgetReading{budget: w.Budget, window: w.Window, limit: w.Limit.Max})
	}
	if len(limits) == 0 {
		return reading, nil
	}
	used, err := m.store.MeasureLimits(ctx, "", limits)
	if err != nil {
		return nil, err
	}
	if len(used) != len(limits) {
		return nil, fmt.Errorf("the store measured %d limits of %d", len(used), len(limits))
	}
	for i := range reading {
		reading[i].used = used[i]
	}
	return reading, nil
}
