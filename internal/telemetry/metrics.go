// Package telemetry reports what the gateway does: its Prometheus
// metrics, its OpenTelemetry spans and the one log line per finished call.
package telemetry

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/promdecimal"
	"github.com/toolgate/toolgate/internal/promshare"
	"github.com/toolgate/toolgate/upstream"
)

// unknownTool is the tool label of requests that name no registered tool.
// A slug never starts with an underscore, so it is no tool's; and callers
// cannot add series by naming tools that do not exist.
const unknownTool = "_unknown"

// Call outcomes, the values of toolgate_calls_total's outcome label.
const (
	outcomeCompleted = "completed" // ran, and the provider's answer became the output
	outcomeFailed    = "failed"    // ran, and failed: not charged
	outcomeRefused   = "refused"   // answered with an error before running
	outcomeReplayed  = "replayed"  // a retry answered with the stored result
	// outcomeAmbiguous: ran, and whether the provider acted on it is
	// unknown; reserved, not charged, until a person resolves it.
	outcomeAmbiguous = "ambiguous"
)

// metrics are the gateway's Prometheus metrics. Every label comes from a
// small fixed set or is a registered tool's slug; no principal, key, quote
// or execution id is ever one. A nil *metrics records nothing.
type metrics struct {
	// tools holds each tool's series once first used (*toolSeries by
	// slug), so that recording a call hashes no labels.
	tools sync.Map

	quotes           *prometheus.CounterVec
	calls            *prometheus.CounterVec
	callDuration     *prometheus.HistogramVec
	upstreamDuration *prometheus.HistogramVec
	upstreamAttempts *prometheus.CounterVec
	charged          *promdecimal.CounterVec
	circuitOpen      *prometheus.GaugeVec
	approvalRequests *prometheus.CounterVec
	budgetRefusals   *prometheus.CounterVec
}

// durationBuckets are histogram buckets for a tool call: from a few
// milliseconds (an answer from a nearby cache) to the upstream deadline,
// past which no call runs.
func durationBuckets(deadline time.Duration) []float64 {
	var out []float64
	for _, b := range []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60} {
		if b >= deadline.Seconds() {
			break
		}
		out = append(out, b)
	}
	return append(out, deadline.Seconds())
}

// newMetrics registers the gateway's metrics with reg; nil reg means none.
// Metrics another gateway already registered with reg are shared, so
// several gateways can report to one registry.
func newMetrics(reg prometheus.Registerer, deadline time.Duration) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	buckets := durationBuckets(deadline)
	var errs []error
	m := &metrics{
		quotes: promshare.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_quotes_total",
			Help: "Quote requests, by the tool they named (_unknown: no registered tool).",
		}, []string{"tool"}), &errs),
		calls: promshare.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_calls_total",
			Help: "Call requests by tool and outcome: completed, failed (ran, not charged), ambiguous (may have run, no answer: reserved until a person resolves it), refused (an error before running), replayed (a retry answered from the stored result).",
		}, []string{"tool", "outcome"}), &errs),
		callDuration: promshare.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolgate_call_duration_seconds",
			Help:    "Time from a call's arrival to its recorded result, for calls that ran (completed or failed).",
			Buckets: buckets,
		}, []string{"tool"}), &errs),
		upstreamDuration: promshare.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolgate_upstream_duration_seconds",
			Help:    "Time the provider took for one tool request, every attempt, wait and the reading of the answer included.",
			Buckets: buckets,
		}, []string{"tool"}), &errs),
		upstreamAttempts: promshare.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_upstream_attempts_total",
			Help: "Requests sent to providers, retries included, by tool and result: ok, client_error, throttled, server_error, timeout, network_error, refused.",
		}, []string{"tool", "result"}), &errs),
		// Summed as decimals, so that the amounts read exactly as charged.
		charged: promshare.Register(reg, promdecimal.NewCounterVec("toolgate_charged_usd_total",
			"US dollars charged for completed calls (price plus fee), by tool.",
			[]string{"tool"}), &errs),
		circuitOpen: promshare.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "toolgate_circuit_open",
			Help: "1 while the circuit breaker fails a tool's calls fast after consecutive provider failures, 0 once a call succeeds again.",
		}, []string{"tool"}), &errs),
		approvalRequests: promshare.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_approval_requests_total",
			Help: "Approval requests by what became of them: created, approved, denied, used (by the call it approved); and those asked but not created: limited (the principal asked too often), same_pending (the same request was pending, and answered instead).",
		}, []string{"decision"}), &errs),
		budgetRefusals: promshare.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_budget_refusals_total",
			Help: "Calls refused because a budget's window was short (403 spend_limit_exceeded naming it), by the budget's id and the window: daily, weekly, monthly.",
		}, []string{"budget", "window"}), &errs),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("toolgate: register metrics: %w", err)
	}
	return m, nil
}

// toolSeries are one tool's series. They are made together when the tool
// is first seen, every outcome and attempt result at zero, so that a rate
// or a ratio over them is defined from the start.
type toolSeries struct {
	quotes           prometheus.Counter
	calls            map[string]prometheus.Counter // by outcome
	callDuration     prometheus.Observer
	upstreamDuration prometheus.Observer
	attempts         map[upstream.AttemptResult]prometheus.Counter
	charged          *promdecimal.Counter
	circuitOpen      prometheus.Gauge
}

// tool returns slug's series.
func (m *metrics) tool(slug string) *toolSeries {
	if s, ok := m.tools.Load(slug); ok {
		return s.(*toolSeries)
	}
	s := &toolSeries{
		quotes:           m.quotes.WithLabelValues(slug),
		calls:            map[string]prometheus.Counter{},
		callDuration:     m.callDuration.WithLabelValues(slug),
		upstreamDuration: m.upstreamDuration.WithLabelValues(slug),
		attempts:         map[upstream.AttemptResult]prometheus.Counter{},
		charged:          m.charged.WithLabelValues(slug),
		circuitOpen:      m.circuitOpen.WithLabelValues(slug),
	}
	for _, o := range []string{outcomeCompleted, outcomeFailed, outcomeAmbiguous, outcomeRefused, outcomeReplayed} {
		s.calls[o] = m.calls.WithLabelValues(slug, o)
	}
	for _, r := range upstream.AttemptResults {
		s.attempts[r] = m.upstreamAttempts.WithLabelValues(slug, string(r))
	}
	actual, _ := m.tools.LoadOrStore(slug, s)
	return actual.(*toolSeries)
}
