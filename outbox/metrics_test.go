package outbox_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/outbox"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
)

func TestMetricsShowTheOutboxAsTheStoreHasIt(t *testing.T) {
	t.Parallel()
	s := memory.New()
	addEvents(t, s, 3)
	now := t0.Add(90 * time.Second)
	reg := prometheus.NewRegistry()
	require.NoError(t, outbox.RegisterMetrics(reg, s, func() time.Time { return now }, nil))

	claimed, err := s.ClaimEvents(t.Context(), storage.ClaimEvents{Now: now, Lease: time.Minute, Limit: 2})
	require.NoError(t, err)
	require.NoError(t, s.EventAttempted(t.Context(), storage.EventAttempt{ID: claimed[0].ID, LeaseToken: claimed[0].LeaseToken, Now: now, Status: storage.EventDelivered}))
	require.NoError(t, s.EventAttempted(t.Context(), storage.EventAttempt{ID: claimed[1].ID, LeaseToken: claimed[1].LeaseToken, Now: now, Status: storage.EventFailed}))

	families, err := reg.Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			values[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"toolgate_events_pending":                    1,
		"toolgate_events_oldest_pending_age_seconds": 90,
	}
	for _, typ := range []string{"approval_request.created", "approval_request.decided", "execution.ambiguous", "budget.threshold", "budget.limit_reached"} {
		want["toolgate_events_delivered_total/"+typ] = 0
		want["toolgate_events_failed_total/"+typ] = 0
	}
	want["toolgate_events_delivered_total/approval_request.created"] = 1
	want["toolgate_events_failed_total/approval_request.created"] = 1
	assert.Equal(t, want, values, "every type from the start, at 0 until counted")

	// A second registration on the same registerer shares the first.
	require.NoError(t, outbox.RegisterMetrics(reg, s, nil, nil))
}
