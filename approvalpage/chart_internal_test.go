package approvalpage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The chart's days are the budget's dates whatever its zone: the summary
// bounds them by instants, the budget's midnights.
func TestDayKeysInTheBudgetsZone(t *testing.T) {
	t.Parallel()
	for _, zone := range []string{"UTC", "Europe/Berlin", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Auckland", "America/Sao_Paulo"} {
		t.Run(zone, func(t *testing.T) {
			loc, err := time.LoadLocation(zone)
			require.NoError(t, err)
			// Thirty days across Europe's and America's change of clocks.
			since := time.Date(2030, 3, 15, 0, 0, 0, 0, loc)
			until := time.Date(2030, 4, 14, 0, 0, 0, 0, loc)
			keys := dayKeys(&toolgatetype.SpendSummary{Since: since.UTC(), Until: until.UTC(),
				Groups: []toolgatetype.SpendGroup{{Key: "2030-04-13", TotalUSD: "1.0000", Count: 1}}})
			require.Len(t, keys, 30)
			assert.Equal(t, "2030-03-15", keys[0])
			assert.Equal(t, "2030-04-13", keys[29])
		})
	}
}

func TestDailyChartScalesToTheHighestDay(t *testing.T) {
	t.Parallel()
	since := time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC)
	c := dailyChart("Team", &toolgatetype.SpendSummary{Since: since, Until: since.AddDate(0, 0, 3), Groups: []toolgatetype.SpendGroup{
		{Key: "2030-03-01", TotalUSD: "2.0000", Count: 2}, {Key: "2030-03-03", TotalUSD: "0.0001", Count: 1},
	}})
	require.Len(t, c.Bars, 3)
	assert.Equal(t, "96.00", c.Bars[0].H, "the highest day fills the chart's height")
	assert.Equal(t, "0.00", c.Bars[1].H, "a day with nothing has no bar")
	assert.Equal(t, "1.00", c.Bars[2].H, "a day with any spend shows")
	assert.Equal(t, "One bar a day. 2.0001 USD in all; the highest day, 2030-03-01, 2.0000 USD.", c.Desc)
	assert.Equal(t, "2030-03-03: 0.0001 USD", c.Bars[2].Label)
}

func TestWindowLevels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit, used string
		width, text string
		level       string
	}{
		{"50.0000", "10.0000", "20", "20%", "ok"},
		{"50.0000", "40.0000", "80", "80%", "high"},
		{"50.0000", "56.0000", "100", "112%", "over"},
		{"0.0000", "0.0000", "100", "100%", "over"},
	} {
		w := windowOf(toolgatetype.BudgetDaily, toolgatetype.BudgetWindow{LimitUSD: c.limit, UsedUSD: c.used}, time.Now())
		assert.Equal(t, c.width, w.BarWidth, "%s of %s", c.used, c.limit)
		assert.Equal(t, c.text, w.PercentText)
		assert.Equal(t, c.level, w.Level)
		assert.Equal(t, c.text+" of the daily limit used", w.BarLabel)
	}
}
