package authlimit

import (
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/promshare"
)

// metrics are a Limiter's Prometheus counters, by surface. A nil *metrics
// records nothing.
type metrics struct {
	failures map[Surface]prometheus.Counter
	refused  map[Surface]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_auth_failures_total",
		Help: "Keys, approver keys and tokens refused as unknown, by surface: api, mcp, approval_page.",
	}, []string{"surface"})
	limited := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_auth_limited_total",
		Help: "Requests refused with 429 because their client address or key prefix failed too often in a window, by surface.",
	}, []string{"surface"})
	var errs []error
	failures, limited = promshare.Register(reg, failures, &errs), promshare.Register(reg, limited, &errs)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("authlimit: register metrics: %w", err)
	}
	m := &metrics{failures: map[Surface]prometheus.Counter{}, refused: map[Surface]prometheus.Counter{}}
	for _, s := range surfaces {
		m.failures[s] = failures.WithLabelValues(string(s))
		m.refused[s] = limited.WithLabelValues(string(s))
	}
	return m, nil
}

func (m *metrics) failed(s Surface) {
	if m != nil {
		if c := m.failures[s]; c != nil {
			c.Inc()
		}
	}
}

func (m *metrics) limited(s Surface) {
	if m != nil {
		if c := m.refused[s]; c != nil {
			c.Inc()
		}
	}
}

// splitComma yields the trimmed, non-empty parts of a comma-separated
// header value.
func splitComma(v string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for part := range strings.SplitSeq(v, ",") {
			if part = strings.TrimSpace(part); part != "" && !yield(part) {
				return
			}
		}
	}
}
