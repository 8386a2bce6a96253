package budgets

import (
	"testing"
	"time"

	"github.com/toolgate/toolgate/toolgatetype"
)

func TestWindow(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name, zone string
		kind       toolgatetype.BudgetWindowKind
		now        string
		start, end string // RFC 3339 in UTC
		fromDay    string
		hours      float64
	}{
		{"utc day", "UTC", toolgatetype.BudgetDaily, "2026-03-10T13:00:00Z", "2026-03-10T00:00:00Z", "2026-03-11T00:00:00Z", "2026-03-10", 24},
		{"berlin day before local midnight", "Europe/Berlin", toolgatetype.BudgetDaily, "2026-03-10T22:59:59Z", "2026-03-09T23:00:00Z", "2026-03-10T23:00:00Z", "2026-03-10", 24},
		{"berlin day after local midnight", "Europe/Berlin", toolgatetype.BudgetDaily, "2026-03-10T23:00:00Z", "2026-03-10T23:00:00Z", "2026-03-11T23:00:00Z", "2026-03-11", 24},
		{"berlin spring forward: 23 hours", "Europe/Berlin", toolgatetype.BudgetDaily, "2026-03-29T12:00:00Z", "2026-03-28T23:00:00Z", "2026-03-29T22:00:00Z", "2026-03-29", 23},
		{"berlin fall back: 25 hours", "Europe/Berlin", toolgatetype.BudgetDaily, "2026-10-25T12:00:00Z", "2026-10-24T22:00:00Z", "2026-10-25T23:00:00Z", "2026-10-25", 25},
		{"berlin week across the spring change", "Europe/Berlin", toolgatetype.BudgetWeekly, "2026-03-29T21:00:00Z", "2026-03-22T23:00:00Z", "2026-03-29T22:00:00Z", "2026-03-23", 7*24 - 1},
		{"berlin month across the fall change", "Europe/Berlin", toolgatetype.BudgetMonthly, "2026-10-31T22:30:00Z", "2026-09-30T22:00:00Z", "2026-10-31T23:00:00Z", "2026-10-01", 31*24 + 1},
		{"week across a month", "UTC", toolgatetype.BudgetWeekly, "2026-04-02T08:00:00Z", "2026-03-30T00:00:00Z", "2026-04-06T00:00:00Z", "2026-03-30", 7 * 24},
		{"week across a year", "UTC", toolgatetype.BudgetWeekly, "2027-01-01T08:00:00Z", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z", "2026-12-28", 7 * 24},
		{"sunday is the week's last day", "UTC", toolgatetype.BudgetWeekly, "2026-03-15T23:59:59Z", "2026-03-09T00:00:00Z", "2026-03-16T00:00:00Z", "2026-03-09", 7 * 24},
		{"monday starts the week", "UTC", toolgatetype.BudgetWeekly, "2026-03-16T00:00:00Z", "2026-03-16T00:00:00Z", "2026-03-23T00:00:00Z", "2026-03-16", 7 * 24},
		{"kolkata week on sunday evening utc", "Asia/Kolkata", toolgatetype.BudgetWeekly, "2026-03-15T19:00:00Z", "2026-03-15T18:30:00Z", "2026-03-22T18:30:00Z", "2026-03-16", 7 * 24},
		{"kolkata month starts before utc's", "Asia/Kolkata", toolgatetype.BudgetMonthly, "2026-02-28T19:00:00Z", "2026-02-28T18:30:00Z", "2026-03-31T18:30:00Z", "2026-03-01", 31 * 24},
		{"february", "UTC", toolgatetype.BudgetMonthly, "2028-02-29T10:00:00Z", "2028-02-01T00:00:00Z", "2028-03-01T00:00:00Z", "2028-02-01", 29 * 24},
		{"december", "UTC", toolgatetype.BudgetMonthly, "2026-12-31T23:00:00Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", "2026-12-01", 31 * 24},
		// Santiago's clocks jumped from 00:00 to 01:00 on 2022-09-11: the
		// day starts at 01:00 local and lasts 23 hours.
		{"santiago midnight skipped", "America/Santiago", toolgatetype.BudgetDaily, "2022-09-11T12:00:00Z", "2022-09-11T04:00:00Z", "2022-09-12T03:00:00Z", "2022-09-11", 23},
		{"santiago day before the skip", "America/Santiago", toolgatetype.BudgetDaily, "2022-09-10T12:00:00Z", "2022-09-10T04:00:00Z", "2022-09-11T04:00:00Z", "2022-09-10", 24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tree, err := New([]toolgatetype.BudgetDefinition{{ID: "b", DailyLimitUSD: usd("1"), TimeZone: tt.zone}})
			if err != nil {
				t.Fatal(err)
			}
			n := tree.Get("b")
			now := at(tt.now)
			start, end, fromDay := n.Window(tt.kind, now)
			if !start.Equal(at(tt.start)) || !end.Equal(at(tt.end)) || fromDay != tt.fromDay {
				t.Errorf("Window(%s, %s) = %s, %s, %s; want %s, %s, %s", tt.kind, tt.now,
					start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), fromDay, tt.start, tt.end, tt.fromDay)
			}
			if h := end.Sub(start).Hours(); h != tt.hours {
				t.Errorf("the window lasts %v hours, want %v", h, tt.hours)
			}
			if now.Before(start) || !now.Before(end) {
				t.Errorf("now %s is outside [%s, %s)", now, start, end)
			}
			if tt.kind == toolgatetype.BudgetDaily && n.Day(now) != fromDay {
				t.Errorf("Day = %s, want the daily window's first day %s", n.Day(now), fromDay)
			}
		})
	}
}
