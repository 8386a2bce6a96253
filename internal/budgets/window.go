package budgets

import (
	"fmt"
	"time"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Window returns the calendar window of kind that holds now in the
// budget's time zone: its start, its end (when it resets) and its first
// day as YYYY-MM-DD. The bounds are local midnights, so a day across a
// daylight-saving change lasts 23 or 25 hours.
func (n *Node) Window(kind toolgatetype.BudgetWindowKind, now time.Time) (start, end time.Time, fromDay string) {
	local := now.In(n.Location)
	y, m, d := local.Date()
	switch kind {
	case toolgatetype.BudgetWeekly:
		// ISO weeks start on Monday; time.Weekday counts from Sunday.
		back := (int(local.Weekday()) + 6) % 7
		start = midnight(y, m, d-back, n.Location)
		end = midnight(y, m, d-back+7, n.Location)
	case toolgatetype.BudgetMonthly:
		start = midnight(y, m, 1, n.Location)
		end = midnight(y, m+1, 1, n.Location)
	default:
		start = midnight(y, m, d, n.Location)
		end = midnight(y, m, d+1, n.Location)
	}
	return start, end, start.Format(time.DateOnly)
}

// DayStart returns the first instant of the day after days after date
// (YYYY-MM-DD) in the budget's time zone: date's own start for 0, its end
// for 1. It fails on anything but a valid date.
func (n *Node) DayStart(date string, after int) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, date)
	if err != nil || d.Format(time.DateOnly) != date {
		return time.Time{}, fmt.Errorf("budgets: %q is not a date YYYY-MM-DD", date)
	}
	return midnight(d.Year(), d.Month(), d.Day()+after, n.Location), nil
}

// midnight is the first instant of a day in loc (d may be out of its
// month's range, as time.Date takes it). Where a zone's clocks jump
// forward at midnight (America/Santiago, America/Havana), the day starts
// at the jump, and time.Date may answer the previous day's last hour
// instead: the end of that hour's zone period is then the day's start.
func midnight(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if want := time.Date(y, m, d, 0, 0, 0, 0, time.UTC); t.Day() != want.Day() {
		if _, end := t.ZoneBounds(); !end.IsZero() {
			return end
		}
	}
	return t
}

// SpendWindow is the window a budget's spend is shown over when nobody
// says which: the one window its limits have (a weekly budget's week, a
// daily one's day), its own limits and its tools' together; the month
// when they have several, or none (a budget of rate limits only).
func (n *Node) SpendWindow() toolgatetype.BudgetWindowKind {
	kinds := map[toolgatetype.BudgetWindowKind]bool{}
	for k := range n.Limits {
		kinds[k] = true
	}
	for _, t := range n.Tools {
		for k := range t.Limits {
			kinds[k] = true
		}
	}
	if len(kinds) == 1 {
		for k := range kinds {
			return k
		}
	}
	return toolgatetype.BudgetMonthly
}
