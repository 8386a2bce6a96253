package approvalpage

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/toolgatetype"

	// A budget's zone loads wherever the page runs, zoneinfo or not.
	_ "time/tzdata"
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

// dailyChart lays out keys, the dates sum (grouped by day) counted,
// oldest first, each day a bar as tall as its share of the highest.
func dailyChart(name string, keys []string, sum *toolgatetype.SpendSummary) chartView {
	byDay := map[string]toolgatetype.SpendGroup{}
	for _, g := range sum.Groups {
		byDay[g.Key] = g
	}
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

// chartDates are the chartDays dates (YYYY-MM-DD) of loc's calendar that
// end with now's, oldest first. The dates are counted on a calendar of
// their own (UTC's, which has no change of clocks), so a day of 23 or 25
// hours where the budget is still takes one step.
func chartDates(now time.Time, loc *time.Location) []string {
	y, m, d := now.In(loc).Date()
	keys := make([]string, chartDays)
	for i := range keys {
		keys[i] = time.Date(y, m, d-(chartDays-1)+i, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	}
	return keys
}

// zoneOf is a budget's time zone by its IANA name; UTC for none, or for
// one this program cannot load (the gateway, which checked the name at
// start, loads the same embedded database, so that is not expected).
func zoneOf(name string) *time.Location {
	if name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}
