package toolgate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ambiguousMetricNames are the metrics of the calls waiting for a person.
var ambiguousMetricNames = []string{"toolgate_ambiguous_calls_waiting", "toolgate_ambiguous_oldest_age_seconds"}

// assertAmbiguousMetrics checks what a scrape of reg says of the calls
// waiting: how many, and the oldest's age in seconds.
func assertAmbiguousMetrics(t *testing.T, reg *prometheus.Registry, waiting int, age float64, msg string) {
	t.Helper()
	want := fmt.Sprintf(`# HELP toolgate_ambiguous_calls_waiting Calls whose outcome nobody knows (status ambiguous) that no person has resolved yet, across every instance.
# TYPE toolgate_ambiguous_calls_waiting gauge
toolgate_ambiguous_calls_waiting %d
# HELP toolgate_ambiguous_oldest_age_seconds Seconds since the oldest unresolved ambiguous call was admitted, across every instance; 0 when none waits.
# TYPE toolgate_ambiguous_oldest_age_seconds gauge
toolgate_ambiguous_oldest_age_seconds %g
`, waiting, age)
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), ambiguousMetricNames...), msg)
}

// An operator sees how many ambiguous calls wait and for how long: none at
// first, one once a provider hangs up on a call, whose age grows with the
// clock, and none again once a person resolves it.
func TestAmbiguousMetricsShowTheCallsWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	clock := toolgatetest.NewFakeClock(toolgatetest.DefaultStart)
	p := newTicketProvider(t, 1000, false)
	gw := ticketGatewayWith(t, p.srv.URL, false, func(c *toolgate.Config) {
		c.Clock = clock
		c.Metrics = reg
		c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"dana": {"alice"}}}
	})
	assertAmbiguousMetrics(t, reg, 0, 0, "no call yet: the gauges are there, at zero")

	first := ambiguousCall(t, gw, "k1")
	clock.Advance(10 * time.Second)
	assertAmbiguousMetrics(t, reg, 1, 10, "read again 10 s later: one call, admitted 10 s ago")
	clock.Advance(5 * time.Second)
	assertAmbiguousMetrics(t, reg, 1, 15, "the age grows between reads of the store")

	clock.Advance(time.Minute)
	ambiguousCall(t, gw, "k2")
	clock.Advance(10 * time.Second)
	assertAmbiguousMetrics(t, reg, 2, 85, "two calls: the age is the older one's")

	_, err := gw.ResolveExecution(ctx, "dana", first.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed})
	require.NoError(t, err)
	clock.Advance(10 * time.Second)
	assertAmbiguousMetrics(t, reg, 1, 20, "the older resolved: the newer one is left")
}

// opaqueStore is a memory store that cannot count the calls waiting, and
// says so.
type opaqueStore struct{ storage.Store }

func (opaqueStore) AmbiguousWaiting(context.Context) (int64, time.Time, error) {
	return 0, time.Time{}, storage.ErrUnsupported
}

// A gateway on a store that cannot count the calls waiting exports no
// such metric rather than a made-up zero.
func TestAmbiguousMetricsNeedAStoreThatCounts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	_, err := toolgate.New(opaqueStore{memory.New()}, &toolgate.Config{Metrics: reg})
	require.NoError(t, err)
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		assert.NotContains(t, ambiguousMetricNames, f.GetName())
	}
}
