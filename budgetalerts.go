package toolgate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetCheckTimeout bounds one budget's check: the store's reads and
// claims. A check that runs out tries again on the budget's next charge.
const budgetCheckTimeout = 30 * time.Second

// budgetAlerts watches the budgets' windows: it sends one budget.threshold
// event per crossing across the fleet and exports the budget metrics.
//
// An alert is claimed in the store before it is given to the notifier, so
// it is sent at most once, not at least once. When the notifier drops it
// (a webhook.Sender whose queue is full drops the event with a warning),
// the claim stands and the alert is lost for its period. When the process
// dies between the claim and the delivery, the alert is lost the same way.
// The way out of both is an outbox of claimed alerts not yet delivered,
// which no store keeps yet. A shutdown loses none: Gateway.Close waits for
// the checks running, so a caller closes the notifier only after them.
type budgetAlerts struct {
	g *Gateway
	// ledger claims each alert once across every gateway on the store;
	// nil when the store keeps no claims, and then this gateway's claimed
	// map is the only record.
	ledger storage.AlertLedger
	// metrics export each window's use; nil without Config.Metrics.
	metrics *budgetMetrics

	mu sync.Mutex
	// checks holds the budgets whose check is running, each with the days
	// charged since it started: a charge during a check asks for one more
	// rather than a second check of its own.
	checks map[string]map[string]struct{}
	// idle is signalled whenever a budget's check ends (waitBudgetAlerts).
	idle *sync.Cond
	// closed is set by Gateway.Close: no check starts after it.
	closed bool
	// running counts the checks' goroutines, for Close to wait on.
	running sync.WaitGroup
	// base is every check's context, cancelled when Close's deadline
	// passes so that checks still running stop rather than use a store
	// being closed.
	base       context.Context
	cancelBase context.CancelFunc
	// claimed holds the alerts sent (by this gateway or, as the ledger
	// said, another), each until its period ends, so that a window past a
	// fraction costs no read to be told so again.
	claimed map[string]time.Time
}

// newBudgetAlerts starts watching g.budgets.
func (g *Gateway) newBudgetAlerts() (*budgetAlerts, error) {
	a := &budgetAlerts{
		g:       g,
		checks:  map[string]map[string]struct{}{},
		claimed: map[string]time.Time{},
	}
	a.idle = sync.NewCond(&a.mu)
	a.base, a.cancelBase = context.WithCancel(context.Background())
	a.ledger, _ = g.store.(storage.AlertLedger)
	var err error
	if a.metrics, err = newBudgetMetrics(g); err != nil {
		return nil, err
	}
	return a, nil
}

// budgetCharged is told of each call charged to budgets (a completed
// finish, or an ambiguous one resolved completed), after the store has it.
// It must not block the call: the budgets are checked in the background.
func (g *Gateway) budgetCharged(_ context.Context, charged []storage.BudgetDay) {
	if g.alerts == nil {
		return
	}
	for _, bd := range charged {
		n := g.budgets.Get(bd.Budget)
		if n == nil || len(n.Alerts) == 0 || len(n.Limits) == 0 {
			continue
		}
		g.alerts.charge(n, bd.Day)
	}
}

// charge asks for a check of n's windows holding day, starting one unless
// n's is running already.
func (a *budgetAlerts) charge(n *budgets.Node, day string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		// The gateway is closing: its notifier and store are about to be.
		return
	}
	if days, running := a.checks[n.ID]; running {
		days[day] = struct{}{}
		return
	}
	a.checks[n.ID] = map[string]struct{}{day: {}}
	a.running.Add(1)
	go a.run(n)
}

// run checks n until no charge has come in since its last check.
func (a *budgetAlerts) run(n *budgets.Node) {
	defer a.running.Done()
	for {
		a.mu.Lock()
		days := a.checks[n.ID]
		if len(days) == 0 {
			delete(a.checks, n.ID)
			a.idle.Broadcast()
			a.mu.Unlock()
			return
		}
		a.checks[n.ID] = map[string]struct{}{}
		a.mu.Unlock()

		ctx, cancel := context.WithTimeout(a.base, budgetCheckTimeout)
		for _, day := range slices.Sorted(maps.Keys(days)) {
			a.check(ctx, n, day)
		}
		cancel()
	}
}

// waitBudgetAlerts returns once no budget's check is running, so that a
// test sees every alert its calls caused.
func (g *Gateway) waitBudgetAlerts() {
	if g.alerts == nil {
		return
	}
	a := g.alerts
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.checks) > 0 {
		a.idle.Wait()
	}
}

// check sends the alerts of n's windows holding day (a charged call's day
// in n's time zone) whose fractions its charged use has reached.
func (a *budgetAlerts) check(ctx context.Context, n *budgets.Node, day string) {
	now := a.g.clock.Now()
	a.forgetEnded(now)
	at := now
	if d, err := time.ParseInLocation(time.DateOnly, day, n.Location); err == nil {
		// Midday is inside the day whatever a change of clocks does to it.
		at = d.Add(12 * time.Hour)
	}
	untilDay := nextDay(n.Day(now))
	for _, kind := range budgets.Windows {
		limit, ok := n.Limits[kind]
		if !ok || !limit.IsPositive() {
			continue
		}
		start, end, fromDay := n.Window(kind, at)
		if !end.After(now) {
			// A call resolved after its period ended: the period is over,
			// and an alert about it would warn of nothing to come.
			continue
		}
		due := a.unclaimed(n, kind, fromDay)
		if len(due) == 0 {
			continue
		}
		used, err := a.charged(ctx, n.ID, fromDay, untilDay)
		if err != nil {
			a.g.log.WarnContext(ctx, "budget alerts: cannot read a budget's spend; checked again on its next charge",
				"budget", n.ID, "window", string(kind), "error", err)
			return
		}
		for _, f := range due {
			if used.LessThan(limit.Mul(decimal.NewFromFloat(f))) {
				break // due is ascending: no higher fraction is reached either
			}
			th := toolgatetype.BudgetThreshold{
				Budget:      toolgatetype.BudgetRef{ID: n.ID, Name: n.Name},
				Window:      kind,
				Fraction:    f,
				UsedUSD:     usd(used),
				LimitUSD:    usd(limit),
				PeriodStart: start.UTC(),
				ResetsAt:    end.UTC(),
			}
			id := alertID(n.ID, kind, f, fromDay)
			first, err := a.claim(ctx, id, end, now)
			if err != nil {
				a.g.log.WarnContext(ctx, "budget alerts: cannot claim an alert; tried again on the budget's next charge",
					"alert", id, "error", err)
				return
			}
			if first {
				a.send(ctx, id, th, now)
			}
		}
	}
}

// unclaimed returns the fractions of n's alerts, ascending, not yet
// claimed for kind's period starting on fromDay.
func (a *budgetAlerts) unclaimed(n *budgets.Node, kind toolgatetype.BudgetWindowKind, fromDay string) []float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var due []float64
	for _, f := range n.Alerts {
		if _, done := a.claimed[alertID(n.ID, kind, f, fromDay)]; !done {
			due = append(due, f)
		}
	}
	return due
}

// charged sums what calls were charged in a budget on [fromDay, untilDay):
// charged only, as an alert speaks of money spent, not of calls that may
// still fail and give theirs back.
func (a *budgetAlerts) charged(ctx context.Context, budget, fromDay, untilDay string) (decimal.Decimal, error) {
	groups, err := a.g.store.SpendSummary(ctx, storage.SpendQuery{
		Budget: budget, FromDay: fromDay, UntilDay: untilDay, GroupBy: toolgatetype.SpendByDay,
	})
	if err != nil {
		return decimal.Zero, err
	}
	total := decimal.Zero
	for _, g := range groups {
		total = total.Add(g.TotalUSD)
	}
	return total, nil
}

// claim reports whether this gateway is the one to send alert id: the
// first, across the fleet when the store keeps claims, in this gateway
// otherwise. Either way id is remembered until end, its period's end.
func (a *budgetAlerts) claim(ctx context.Context, id string, end, now time.Time) (bool, error) {
	first := true
	if a.ledger != nil {
		var err error
		if first, err = a.ledger.ClaimAlert(ctx, id, now); err != nil {
			return false, err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, done := a.claimed[id]; done {
		first = false
	}
	a.claimed[id] = end
	return first, nil
}

// forgetEnded drops the claims of periods that have ended: their ids
// cannot come again.
func (a *budgetAlerts) forgetEnded(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, end := range a.claimed {
		if !end.After(now) {
			delete(a.claimed, id)
		}
	}
}

// send logs the crossing and gives it to the notifier.
func (a *budgetAlerts) send(ctx context.Context, id string, th toolgatetype.BudgetThreshold, now time.Time) {
	a.g.log.WarnContext(ctx, "budget threshold crossed",
		"budget", th.Budget.ID, "window", string(th.Window), "fraction", th.Fraction,
		"usedUsd", th.UsedUSD, "limitUsd", th.LimitUSD, "resetsAt", th.ResetsAt, "alert", id)
	if a.g.notifier == nil {
		return
	}
	a.g.notifier.NotifyApproval(context.WithoutCancel(ctx), toolgatetype.ApprovalEvent{
		Type:      toolgatetype.BudgetThresholdCrossed,
		Timestamp: now.UTC(),
		Threshold: &th,
		ID:        id,
	})
}

// alertID is the stable id of a crossing, the same on every gateway:
// "budget.threshold:search-team:daily:0.8:2026-11-28", the last part the
// first day of the window's period.
func alertID(budget string, kind toolgatetype.BudgetWindowKind, fraction float64, fromDay string) string {
	return fmt.Sprintf("%s:%s:%s:%s:%s", toolgatetype.BudgetThresholdCrossed, budget, kind,
		strconv.FormatFloat(fraction, 'f', -1, 64), fromDay)
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
