package approvalpage

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The chart's days are the budget's last thirty dates, today's its own:
// an instant that is already tomorrow on Kiritimati (UTC+14) is still
// yesterday on Pago Pago (UTC-11), across a month's end and Europe's and
// America's changes of clocks alike.
func TestChartDatesInTheBudgetsZone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		zone        string
		now         time.Time
		first, last string
	}{
		{"Pacific/Kiritimati", time.Date(2030, 3, 31, 10, 0, 0, 0, time.UTC), "2030-03-03", "2030-04-01"},
		{"Pacific/Kiritimati", time.Date(2030, 3, 31, 9, 59, 0, 0, time.UTC), "2030-03-02", "2030-03-31"},
		{"Pacific/Pago_Pago", time.Date(2030, 4, 1, 10, 59, 0, 0, time.UTC), "2030-03-02", "2030-03-31"},
		{"Pacific/Pago_Pago", time.Date(2030, 4, 1, 11, 0, 0, 0, time.UTC), "2030-03-03", "2030-04-01"},
		{"UTC", time.Date(2030, 4, 1, 0, 0, 0, 0, time.UTC), "2030-03-03", "2030-04-01"},
		{"", time.Date(2030, 3, 31, 23, 59, 0, 0, time.UTC), "2030-03-02", "2030-03-31"},
		{"Europe/Berlin", time.Date(2030, 4, 13, 22, 30, 0, 0, time.UTC), "2030-03-16", "2030-04-14"},
		{"America/Los_Angeles", time.Date(2030, 4, 14, 6, 59, 0, 0, time.UTC), "2030-03-15", "2030-04-13"},
	} {
		t.Run(c.zone+" "+c.now.Format(time.RFC3339), func(t *testing.T) {
			keys := chartDates(c.now, zoneOf(c.zone))
			require.Len(t, keys, chartDays)
			assert.Equal(t, c.first, keys[0])
			assert.Equal(t, c.last, keys[chartDays-1])
			for i := 1; i < len(keys); i++ {
				prev, _ := time.Parse(time.DateOnly, keys[i-1])
				assert.Equal(t, prev.AddDate(0, 0, 1).Format(time.DateOnly), keys[i], "one date after another")
			}
		})
	}
}

func TestDailyChartScalesToTheHighestDay(t *testing.T) {
	t.Parallel()
	since := time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC)
	c := dailyChart("Team", []string{"2030-03-01", "2030-03-02", "2030-03-03"}, &toolgatetype.SpendSummary{Since: since, Until: since.AddDate(0, 0, 3), Groups: []toolgatetype.SpendGroup{
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
