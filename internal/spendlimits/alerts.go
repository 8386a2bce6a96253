package spendlimits

import (
	"log/slog"
	"time"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/events"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Alerts are the budget.threshold events a charge in charged may
// cause: one per budget window with a limit and alert fraction, for the
// store to write with the charge when the window's charged spend, the
// charge included, reaches it (storage.BudgetAlert). The store writes an
// id once, so a fraction reached earlier in the period is not sent again.
// Nil when tree has no budget alerts; log hears of an alert that cannot be
// encoded.
func Alerts(tree *budgets.Tree, charged []storage.BudgetDay, now time.Time, log *slog.Logger) []storage.BudgetAlert {
	var out []storage.BudgetAlert
	for _, bd := range charged {
		n := tree.Get(bd.Budget)
		if n == nil || len(n.Alerts) == 0 || len(n.Limits) == 0 {
			continue
		}
		at := now
		if d, err := time.ParseInLocation(time.DateOnly, bd.Day, n.Location); err == nil {
			// Midday is inside the day whatever a change of clocks does to it.
			at = d.Add(12 * time.Hour)
		}
		untilDay := nextDay(max(bd.Day, n.Day(now)))
		for _, kind := range budgets.Windows {
			limit, ok := n.Limits[kind]
			if !ok || !limit.IsPositive() {
				continue
			}
			start, end, fromDay := n.Window(kind, at)
			if !end.After(now) {
				// A call resolved after its period ended: an alert about
				// it would warn of nothing to come.
				continue
			}
			for _, f := range n.Alerts {
				th := toolgatetype.BudgetThreshold{
					Budget: toolgatetype.BudgetRef{ID: n.ID, Name: n.Name}, Window: kind, Fraction: f,
					LimitUSD: usd(limit), PeriodStart: start.UTC(), ResetsAt: end.UTC(),
				}
				ev, err := events.Threshold(th, fromDay, now)
				if err != nil {
					log.Error("budget alerts: cannot encode an alert", "budget", n.ID, "error", err)
					continue
				}
				out = append(out, storage.BudgetAlert{
					Budget: n.ID, FromDay: fromDay, UntilDay: untilDay,
					Threshold: limit.Mul(decimal.NewFromFloat(f)), Event: ev,
				})
			}
		}
	}
	return out
}

// RefusalEvents are the events of a call refused by a budget's window (r):
// budget.limit_reached, once per budget, window and period, and the
// window's 100% alert when its alerts have one, since a window that
// refuses calls is as full as it will get (the organization stopped at
// 19.80 of 20 hears of it). An event that cannot be encoded is left out,
// its error in errs. None for a budget's limit on one tool, which is no
// window of the budget's own.
func RefusalEvents(tree *budgets.Tree, r *toolgatetype.BudgetRefusal, now time.Time) (evs []storage.NewEvent, errs []error) {
	if r == nil || r.Tool != "" {
		return nil, nil
	}
	n := tree.Get(r.ID)
	if n == nil {
		return nil, nil
	}
	start, end, fromDay := n.Window(r.Window, now)
	lr := toolgatetype.BudgetLimitReached{
		Budget: toolgatetype.BudgetRef{ID: n.ID, Name: n.Name}, Window: r.Window,
		UsedUSD: r.UsedUSD, LimitUSD: r.LimitUSD, RequestedUSD: r.RequestedUSD,
		PeriodStart: fromDay, ResetsAt: end.UTC(),
	}
	out := []func() (storage.NewEvent, error){func() (storage.NewEvent, error) { return events.LimitReached(lr, now) }}
	if len(n.Alerts) > 0 && n.Alerts[len(n.Alerts)-1] == 1 {
		th := toolgatetype.BudgetThreshold{
			Budget: lr.Budget, Window: r.Window, Fraction: 1,
			UsedUSD: r.UsedUSD, LimitUSD: r.LimitUSD, PeriodStart: start.UTC(), ResetsAt: end.UTC(),
		}
		out = append(out, func() (storage.NewEvent, error) { return events.Threshold(th, fromDay, now) })
	}
	for _, build := range out {
		ev, err := build()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		evs = append(evs, ev)
	}
	return evs, errs
}

// nextDay is the calendar day after day (YYYY-MM-DD); day itself when it
// is not one.
func nextDay(day string) string {
	d, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return day
	}
	return d.AddDate(0, 0, 1).Format(time.DateOnly)
}
