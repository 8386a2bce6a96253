package approvalpage

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/toolgatetype"
)

// The daily chart is drawn by the server as SVG, in a box of these units
// that the stylesheet stretches to the page's width: no script, and
// nothing wider than the screen.
const (
	chartWidth   = 300
	chartHeight  = 100
	chartBarRoom = chartHeight - 4 // the tallest bar, under a margin
)

// chartView is a budget's daily spend over the last chartDays days: the
// SVG's bars, and the same figures in words for whoever cannot see them.
type chartView struct {
	Title, Desc     string
	Width, Height   int
	Bars            []chartBar
	FirstDay, Today string
	TotalUSD        string
	HighestUSD      string
	HighestDay      string
	Days            []chartDay // every day, oldest first, for the figures in text
}

// chartBar is one day's bar. X, Y, W and H are in the SVG's units.
type chartBar struct {
	X, Y, W, H string
	Label      string
}

// chartDay is one day's figures.
type chartDay struct {
	Day, TotalUSD string
	Count         int64
}

// dailyChart lays out the days of sum (grouped by day), oldest first,
// each day a bar as tall as its share of the highest.
func dailyChart(name string, sum *toolgatetype.SpendSummary) chartView {
	byDay := map[string]toolgatetype.SpendGroup{}
	for _, g := range sum.Groups {
		byDay[g.Key] = g
	}
	keys := dayKeys(sum)
	c := chartView{Width: chartWidth, Height: chartHeight}
	totals := make([]decimal.Decimal, len(keys))
	var total, highest decimal.Decimal
	for i, day := range keys {
		g := byDay[day]
		t, err := decimal.NewFromString(g.TotalUSD)
		if err != nil {
			t = decimal.Zero
		}
		totals[i] = t
		total = total.Add(t)
		if t.GreaterThan(highest) {
			highest, c.HighestDay = t, day
		}
		c.Days = append(c.Days, chartDay{Day: day, TotalUSD: t.StringFixed(4), Count: g.Count})
	}
	if len(keys) == 0 {
		c.Title, c.Desc = "Daily spend of "+name, "No days to show."
		return c
	}
	c.FirstDay, c.Today = c.Days[0].Day, c.Days[len(c.Days)-1].Day
	c.TotalUSD, c.HighestUSD = total.StringFixed(4), highest.StringFixed(4)
	slot := float64(chartWidth) / float64(len(keys))
	for i, t := range totals {
		h := 0.0
		if highest.IsPositive() {
			h = t.Div(highest).InexactFloat64() * chartBarRoom
			if t.IsPositive() && h < 1 {
				h = 1 // a day with any spend shows
			}
		}
		c.Bars = append(c.Bars, chartBar{
			X:     fmt.Sprintf("%.2f", float64(i)*slot+slot*0.1),
			Y:     fmt.Sprintf("%.2f", chartHeight-h),
			W:     fmt.Sprintf("%.2f", slot*0.8),
			H:     fmt.Sprintf("%.2f", h),
			Label: fmt.Sprintf("%s: %s USD", c.Days[i].Day, c.Days[i].TotalUSD),
		})
	}
	c.Title = fmt.Sprintf("Daily spend of %s, %s to %s", name, c.FirstDay, c.Today)
	if highest.IsPositive() {
		c.Desc = fmt.Sprintf("One bar a day. %s USD in all; the highest day, %s, %s USD.", c.TotalUSD, c.HighestDay, c.HighestUSD)
	} else {
		c.Desc = "One bar a day. Nothing was charged in these days."
	}
	return c
}

// dayKeys are the dates (YYYY-MM-DD) of the days sum counted, oldest
// first. The summary gives their bounds as instants: each day begins at a
// midnight of the budget's zone, which is a UTC instant within twelve
// hours of the same date's UTC midnight (on the day before for zones east
// of UTC), so half a day later is always on the budget's date. Zones more
// than twelve hours east are rare; a group dated after the last day found
// shifts the days to it.
func dayKeys(sum *toolgatetype.SpendSummary) []string {
	n := int(sum.Until.Sub(sum.Since).Round(24*time.Hour) / (24 * time.Hour))
	if n <= 0 || n > 400 {
		return nil
	}
	first := sum.Since.UTC().Add(12 * time.Hour)
	first = time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 0, n-1).Format(time.DateOnly)
	for _, g := range sum.Groups {
		if g.Key > last {
			first = first.AddDate(0, 0, 1)
			break
		}
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = first.AddDate(0, 0, i).Format(time.DateOnly)
	}
	return keys
}
