package promdecimal_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/promdecimal"
)

// TestCounterSumsExactly: 55 charges of 0.1000 read 5.5, where a float
// counter reads 5.499999999999999.
func TestCounterSumsExactly(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	v := promdecimal.NewCounterVec("money_usd_total", "Money.", []string{"tool"})
	require.NoError(t, reg.Register(v))
	c := v.WithLabelValues("goal-data")
	tenth := decimal.RequireFromString("0.1000")
	for range 55 {
		c.Add(tenth)
	}
	v.WithLabelValues("other")

	var float float64
	for range 55 {
		float += 0.1
	}
	require.NotEqual(t, 5.5, float, "the drift this counter avoids")

	want := "# HELP money_usd_total Money.\n# TYPE money_usd_total counter\n" +
		"money_usd_total{tool=\"goal-data\"} 5.5\nmoney_usd_total{tool=\"other\"} 0\n"
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "money_usd_total"))
	assert.True(t, c.Sum().Equal(decimal.RequireFromString("5.5")))
	assert.Same(t, c, v.WithLabelValues("goal-data"), "one series per label values")
}
