package budgettest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A budget's day, week and month are its time zone's: spend resets at the
// local midnight, not UTC's. Each case spends the budget's whole limit 30
// minutes before its window ends (local time), is refused until it ends,
// and is admitted again the moment it does, while UTC's calendar has not
// moved on.
func testWindows(t *testing.T, newStore func(*testing.T) storage.Store) {
	for _, tt := range []struct {
		name   string
		zone   string
		window toolgatetype.BudgetWindowKind
		start  string // 30 minutes before the window ends
		resets string
	}{
		// 23:30 in Berlin on a Tuesday; the day ends at 23:00 UTC.
		{"day in Berlin", "Europe/Berlin", toolgatetype.BudgetDaily, "2026-03-10T22:30:00Z", "2026-03-10T23:00:00Z"},
		// The day the clocks go forward lasts 23 hours: it ends at 22:00 UTC.
		{"short day in Berlin", "Europe/Berlin", toolgatetype.BudgetDaily, "2026-03-29T21:30:00Z", "2026-03-29T22:00:00Z"},
		// 23:30 on Sunday in Kolkata; the ISO week ends at Monday 00:00 IST.
		{"week in Kolkata", "Asia/Kolkata", toolgatetype.BudgetWeekly, "2026-03-15T18:00:00Z", "2026-03-15T18:30:00Z"},
		// A week that began in March and ends in April.
		{"week across a month in Berlin", "Europe/Berlin", toolgatetype.BudgetWeekly, "2026-04-05T21:30:00Z", "2026-04-05T22:00:00Z"},
		// 23:30 on March 31st in Berlin; April starts at 22:00 UTC.
		{"month in Berlin", "Europe/Berlin", toolgatetype.BudgetMonthly, "2026-03-31T21:30:00Z", "2026-03-31T22:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := toolgatetype.BudgetDefinition{ID: "team", Name: "Team", Members: []string{"alice"}, TimeZone: tt.zone}
			switch tt.window {
			case toolgatetype.BudgetDaily:
				d.DailyLimitUSD = usd("1")
			case toolgatetype.BudgetWeekly:
				d.WeeklyLimitUSD = usd("1")
			case toolgatetype.BudgetMonthly:
				d.MonthlyLimitUSD = usd("1")
			}
			h := setup(t, newStore, at(tt.start), []toolgatetype.BudgetDefinition{d})
			ctx := context.Background()
			h.mustCall(ctx, "alice", "paid")
			e := h.refused(ctx, "alice", "paid")
			assert.Equal(t, tt.window, e.Budget.Window)
			assert.Equal(t, at(tt.resets), e.Budget.ResetsAt)

			h.clock.Set(at(tt.resets).Add(-time.Second))
			h.refused(ctx, "alice", "paid")

			h.clock.Set(at(tt.resets))
			assert.Equal(t, "0.0000", h.used("team", tt.window), "a new window starts empty")
			h.mustCall(ctx, "alice", "paid")
			assert.Equal(t, at(tt.start).UTC().Format(time.DateOnly), h.clock.Now().UTC().Format(time.DateOnly),
				"the budget's window moved on while UTC's day did not")
		})
	}
}
