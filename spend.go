package toolgate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/spendlimits"
	"github.com/toolgate/toolgate/internal/telemetry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// limitsFor layers a principal's limits: the defaults, the
// operator's controls, then the caller's own (own; nil when none), which
// only ever tighten: they are a caller's self-restraint, not a way past the
// operator's ceiling.
func (g *Gateway) limitsFor(ctx context.Context, principal, slug string, own *toolgatetype.SpendControls) (spendlimits.Limits, error) {
	l := spendlimits.Defaults()
	if g.controls != nil {
		op, err := g.controls.SpendControls(ctx, principal)
		if err != nil {
			return l, internalError(fmt.Errorf("operator spend controls: %w", err))
		}
		l.Apply(op, slug, false)
	}
	if own != nil {
		l.Apply(*own, slug, true)
	}
	return l, nil
}

// SpendControls returns the caller's own stored spend controls, the zero
// value when they have set none. These only ever tighten the operator's:
// the limits in force for a tool are shown in its quote's controls.
func (g *Gateway) SpendControls(ctx context.Context, principal string) (toolgatetype.SpendControls, error) {
	if err := validPrincipal(principal); err != nil {
		return toolgatetype.SpendControls{}, err
	}
	c, err := g.store.GetSpendControls(ctx, principal)
	if errors.Is(err, storage.ErrNotFound) {
		return toolgatetype.SpendControls{}, nil
	}
	if err != nil {
		return toolgatetype.SpendControls{}, internalError(err)
	}
	return c, nil
}

// SetSpendControls replaces the caller's own spend controls. They apply to
// the caller's next quote and call, and can only tighten the operator's
// limits.
func (g *Gateway) SetSpendControls(ctx context.Context, principal string, c toolgatetype.SpendControls) error {
	_, err := g.UpdateSpendControls(ctx, principal, func(stored *toolgatetype.SpendControls) error {
		*stored = c
		return nil
	})
	return err
}

// UpdateSpendControls changes the caller's own spend controls in one atomic
// step of the store, so concurrent changes both survive: update may run
// more than once and must only change its argument; its error aborts the
// change and comes back as it is. It returns the controls stored.
func (g *Gateway) UpdateSpendControls(ctx context.Context, principal string, update func(*toolgatetype.SpendControls) error) (toolgatetype.SpendControls, error) {
	if err := validPrincipal(principal); err != nil {
		return toolgatetype.SpendControls{}, err
	}
	var refused error // update's own error, or the validation's, returned as it is
	c, err := g.store.UpdateSpendControls(ctx, principal, func(c *toolgatetype.SpendControls) error {
		refused = update(c)
		if refused == nil {
			if bad := spendlimits.Validate(*c); bad != nil {
				refused = bad
			}
		}
		return refused
	})
	switch {
	case err != nil && refused != nil && errors.Is(err, refused):
		return toolgatetype.SpendControls{}, refused
	case err != nil:
		return toolgatetype.SpendControls{}, internalError(err)
	}
	return c, nil
}

// callBudgets are the budgets a caller counts in, nearest first: those
// naming the principal and those the claims of the access token in ctx
// join (WithTokenClaims), with their ancestors. Nil, at no cost, when the
// gateway has no budgets.
func (g *Gateway) callBudgets(ctx context.Context, principal string) []*budgets.Node {
	tree := g.budgets.Load()
	if tree == nil {
		return nil
	}
	return tree.For(principal, tokenClaims(ctx))
}

// SetBudgets replaces the budgets (Config.Budgets), checked as New checks
// them, while the gateway runs: calls already admitted keep the budgets
// they were admitted in, and what a budget has spent, kept in the store by
// its id, still counts.
func (g *Gateway) SetBudgets(defs []toolgatetype.BudgetDefinition) error {
	if len(defs) == 0 {
		g.budgets.Store(nil)
		return nil
	}
	tree, err := budgets.New(defs)
	if err != nil {
		return fmt.Errorf("toolgate: %w", err)
	}
	if err := g.registerBudgetMetrics(); err != nil {
		return err
	}
	g.budgets.Store(tree)
	return nil
}

// registerBudgetMetrics registers the budgets' metrics once, which read
// the budgets in force at each scrape.
func (g *Gateway) registerBudgetMetrics() error {
	g.budgetMetricsMu.Lock()
	defer g.budgetMetricsMu.Unlock()
	if g.budgetMetrics {
		return nil
	}
	nodes := func() []*budgets.Node {
		if tree := g.budgets.Load(); tree != nil {
			return tree.Nodes()
		}
		return nil
	}
	c := g.cfg
	if err := telemetry.RegisterBudgets(c.Metrics, g.store, nodes, c.Clock.Now, c.Logger); err != nil {
		return fmt.Errorf("toolgate: %w", err)
	}
	g.budgetMetrics = true
	return nil
}

// budgetAlerts are the budget alerts a charge in charged may cause
// (spendlimits.Alerts); nil when the gateway writes no events.
func (g *Gateway) budgetAlerts(charged []storage.BudgetDay, now time.Time) []storage.BudgetAlert {
	tree := g.budgets.Load()
	if g.events == nil || tree == nil {
		return nil
	}
	return spendlimits.Alerts(tree, charged, now, g.log)
}

// refusalEventTimeout bounds the writing of a refusal's events, which the
// refused caller waits for.
const refusalEventTimeout = 5 * time.Second

// budgetRefused writes the events of a call refused by a budget's window
// (spendlimits.RefusalEvents). Writing them never fails the refusal: an
// error is logged.
func (g *Gateway) budgetRefused(ctx context.Context, r *toolgatetype.BudgetRefusal, now time.Time) {
	tree := g.budgets.Load()
	if g.events == nil || tree == nil {
		return
	}
	evs, errs := spendlimits.RefusalEvents(tree, r, now)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refusalEventTimeout)
	defer cancel()
	for _, err := range errs {
		g.log.WarnContext(ctx, "budget events: cannot write a refusal's event", "budget", r.ID, "window", string(r.Window), "error", err)
	}
	for _, ev := range evs {
		added, err := g.store.AddEvent(ctx, ev)
		if err == nil && added {
			g.events.Wake()
		}
		if err != nil {
			g.log.WarnContext(ctx, "budget events: cannot write a refusal's event", "budget", r.ID, "window", string(r.Window), "error", err)
		}
	}
}

// Budgets a call counts in come from its principal (BudgetDefinition's
// Members) and, for callers signed in with an access token, from the
// token's claims (its Claims), which ride in the request's context.

// claimsKey is the context key of a caller's token claims.
type claimsKey struct{}

// WithTokenClaims returns ctx carrying the claims of the caller's access
// token, which Quote and Call match against the budgets' Claims. The doors
// set them for token callers; an embedder that verifies its own tokens
// sets them itself.
func WithTokenClaims(ctx context.Context, claims map[string][]string) context.Context {
	if len(claims) == 0 {
		return ctx
	}
	return context.WithValue(ctx, claimsKey{}, claims)
}

// tokenClaims are the claims WithTokenClaims put in ctx; nil when none.
func tokenClaims(ctx context.Context) map[string][]string {
	c, _ := ctx.Value(claimsKey{}).(map[string][]string)
	return c
}

// Budgets returns the state of every configured budget, in configuration
// order: each window that has a limit, what is used in it (charged calls
// and the amounts of calls in flight or ambiguous) and when it resets.
// None configured: an empty list.
func (g *Gateway) Budgets(ctx context.Context) ([]toolgatetype.Budget, error) {
	tree := g.budgets.Load()
	if tree == nil {
		return []toolgatetype.Budget{}, nil
	}
	return g.budgetStates(ctx, tree.Nodes())
}

// BudgetsFor returns the budgets an approver may see: those whose
// Approvers name them, and their descendants, in configuration order. An
// approver who may see none gets an empty list.
func (g *Gateway) BudgetsFor(ctx context.Context, approver string) ([]toolgatetype.Budget, error) {
	if err := validPrincipal(approver); err != nil {
		return nil, err
	}
	return g.budgetStates(ctx, g.visibleBudgets(approver))
}

// visibleBudgets are the budgets approver may see, in configuration order.
func (g *Gateway) visibleBudgets(approver string) []*budgets.Node {
	tree := g.budgets.Load()
	if tree == nil {
		return nil
	}
	var out []*budgets.Node
	for _, n := range tree.Nodes() {
		if mayView(n, approver) {
			out = append(out, n)
		}
	}
	return out
}

// mayView reports whether the budget or one of its ancestors names
// approver among its Approvers.
func mayView(n *budgets.Node, approver string) bool {
	for ; n != nil; n = n.Parent {
		if slices.Contains(n.Approvers, approver) {
			return true
		}
	}
	return false
}

// budgetStates measures every window of nodes in one read of the store.
func (g *Gateway) budgetStates(ctx context.Context, nodes []*budgets.Node) ([]toolgatetype.Budget, error) {
	out := make([]toolgatetype.Budget, len(nodes))
	if len(nodes) == 0 {
		return out, nil
	}
	built := spendlimits.AppendBudgetLimits(nil, nodes, nil, g.clock.Now().UTC(), false)
	limits := spendlimits.StoreLimits(built)
	// A budget's limit counts every principal's calls: the principal
	// MeasureLimits takes is not looked at for it.
	used, err := g.store.MeasureLimits(ctx, "", limits)
	if err != nil {
		return nil, internalError(err)
	}
	for i, n := range nodes {
		out[i] = spendlimits.BudgetState(n, built, used)
	}
	return out, nil
}

// BudgetSpend sums what a budget's calls were charged (of its members and
// its descendants'), grouped by f.GroupBy: tool, day or principal. It
// counts whole days of the budget's time zone, by default those of its
// current window when it has limits of one window only, else of the
// current month. Amounts held by calls in flight or ambiguous are not in
// it. An approver the budget does not name (directly or through an
// ancestor) gets not_found, as does an unknown budget.
func (g *Gateway) BudgetSpend(ctx context.Context, approver, budget string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	if err := validPrincipal(approver); err != nil {
		return nil, err
	}
	var n *budgets.Node
	if tree := g.budgets.Load(); tree != nil {
		n = tree.Get(budget)
	}
	if n == nil || !mayView(n, approver) {
		return nil, newError(toolgatetype.CodeNotFound, "no budget %q exists for you", budget)
	}
	if f.GroupBy == "" {
		f.GroupBy = toolgatetype.SpendByTool
	}
	switch f.GroupBy {
	case toolgatetype.SpendByTool, toolgatetype.SpendByDay, toolgatetype.SpendByPrincipal:
	default:
		return nil, paramError("groupBy", "groupBy must be %s, %s or %s", toolgatetype.SpendByDay, toolgatetype.SpendByPrincipal, toolgatetype.SpendByTool)
	}
	if err := dayBounds(n, &f); err != nil {
		return nil, err
	}
	now := g.clock.Now().UTC()
	if f.Until.IsZero() {
		f.Until = now
	}
	if f.Since.IsZero() {
		window := n.SpendWindow()
		f.Since, _, _ = n.Window(window, now)
		if !f.Since.Before(f.Until) {
			return nil, paramError("until", "until must be later than the start of the budget's current %s window, since's default", window)
		}
	}
	if !f.Since.Before(f.Until) {
		return nil, paramError("since", "since must be earlier than until")
	}
	// Every day counted must be a date the stores can name, YYYY-MM-DD,
	// whatever the zone's offset: Until's day is the one before the day
	// it begins, so it ends within the year 9999.
	if !inDateRange(f.Since) {
		return nil, paramError("since", "since must fall in the years 0002 to 9998")
	}
	if !inDateRange(f.Until) {
		return nil, paramError("until", "until must fall in the years 0002 to 9998")
	}
	from, _, fromDay := n.Window(toolgatetype.BudgetDaily, f.Since)
	// The last instant in the range is Until less a nanosecond: the day
	// holding it is the last day counted.
	_, until, _ := n.Window(toolgatetype.BudgetDaily, f.Until.Add(-time.Nanosecond))
	untilDay := n.Day(until)
	groups, err := g.store.SpendSummary(ctx, storage.SpendQuery{Budget: n.ID, FromDay: fromDay, UntilDay: untilDay, GroupBy: f.GroupBy})
	if err != nil {
		return nil, internalError(err)
	}
	return spendSummary(from, until, f.GroupBy, groups), nil
}

// dayBounds turns f's days into the instants they begin and end at in
// n's time zone: FromDay's first instant becomes Since, and the instant
// after ToDay's last becomes Until. A day given beside its instant, or not
// a date, is invalid_request naming the bound.
func dayBounds(n *budgets.Node, f *toolgatetype.SpendFilter) error {
	for _, b := range []struct {
		param, day string
		at         *time.Time
		after      int // days after the date that the bound is the start of
	}{{"since", f.FromDay, &f.Since, 0}, {"until", f.ToDay, &f.Until, 1}} {
		if b.day == "" {
			continue
		}
		if !b.at.IsZero() {
			return paramError(b.param, "%s is given both as an instant and as a day", b.param)
		}
		start, err := n.DayStart(b.day, b.after)
		if err != nil {
			return paramError(b.param, "%s must be a date YYYY-MM-DD, such as 2030-03-15", b.param)
		}
		*b.at = start
	}
	if f.FromDay != "" && f.ToDay != "" && f.ToDay < f.FromDay {
		return paramError("until", "until's day must not be before since's")
	}
	return nil
}

// inDateRange reports whether t lies in years whose days, in any zone and
// with the day after, are dates of four digits.
func inDateRange(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 2 && y <= 9998
}

// BlockedTools returns the slugs of the tools the principal's spend
// controls, the operator's or its own, block ("allowed": false): every
// call of them is refused, so a listing can leave them out.
func (g *Gateway) BlockedTools(ctx context.Context, principal string) (map[string]bool, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	own, err := g.store.GetSpendControls(ctx, principal)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, internalError(err)
	}
	var op toolgatetype.SpendControls
	if g.controls != nil {
		if op, err = g.controls.SpendControls(ctx, principal); err != nil {
			return nil, internalError(fmt.Errorf("operator spend controls: %w", err))
		}
	}
	blocked := map[string]bool{}
	for _, c := range []toolgatetype.SpendControls{op, own} {
		for slug := range c.Tools {
			// The same layering as a call's limits: the operator's, then
			// the caller's own, which only tighten.
			var l spendlimits.Limits
			l.Apply(op, slug, false)
			l.Apply(own, slug, true)
			if l.Tool != nil && !l.Tool.Allowed {
				blocked[slug] = true
			}
		}
	}
	return blocked, nil
}

// Spend sums what the caller was charged over a window, by tool or by UTC
// day: completed executions only, since failed ones are never charged. It
// counts executions still kept (Config.IdempotencyRetention).
func (g *Gateway) Spend(ctx context.Context, principal string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	return g.spend(ctx, []string{principal}, f)
}

// ApproverSpend is Spend for an approver: what every principal the
// approver approves for was charged, together.
func (g *Gateway) ApproverSpend(ctx context.Context, approver string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	principals, err := g.approverScope(ctx, approver)
	if err != nil {
		return nil, err
	}
	return g.spend(ctx, principals, f)
}

func (g *Gateway) spend(ctx context.Context, principals []string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	now := g.clock.Now().UTC()
	// Days belong to a budget's calendar; a principal's spend has none, so
	// they are refused rather than read as UTC's without saying so.
	if f.FromDay != "" {
		return nil, paramError("since", "since must be an instant: days are a budget's (BudgetSpend)")
	}
	if f.ToDay != "" {
		return nil, paramError("until", "until must be an instant: days are a budget's (BudgetSpend)")
	}
	if f.GroupBy == "" {
		f.GroupBy = toolgatetype.SpendByTool
	}
	if f.GroupBy != toolgatetype.SpendByTool && f.GroupBy != toolgatetype.SpendByDay {
		return nil, paramError("groupBy", "groupBy must be %s or %s", toolgatetype.SpendByTool, toolgatetype.SpendByDay)
	}
	if f.Until.IsZero() {
		f.Until = now
	}
	if f.Since.IsZero() {
		f.Since = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		if !f.Since.Before(f.Until) {
			return nil, paramError("until", "until must be later than the start of the current UTC month, since's default")
		}
	}
	if !f.Since.Before(f.Until) {
		return nil, paramError("since", "since must be earlier than until")
	}
	var groups []storage.SpendGroup
	if len(principals) > 0 {
		var err error
		groups, err = g.store.SpendSummary(ctx, storage.SpendQuery{Principals: principals, Since: f.Since, Until: f.Until, GroupBy: f.GroupBy})
		if err != nil {
			return nil, internalError(err)
		}
	}
	return spendSummary(f.Since, f.Until, f.GroupBy, groups), nil
}

// spendSummary is what callers are shown of the store's groups: each
// group's sum and the total, as 4-decimal text.
func spendSummary(since, until time.Time, by toolgatetype.SpendGrouping, groups []storage.SpendGroup) *toolgatetype.SpendSummary {
	out := &toolgatetype.SpendSummary{Since: since.UTC(), Until: until.UTC(), GroupBy: by, Groups: make([]toolgatetype.SpendGroup, len(groups))}
	total := decimal.Zero
	for i, gr := range groups {
		total = total.Add(gr.TotalUSD)
		out.Groups[i] = toolgatetype.SpendGroup{Key: gr.Key, TotalUSD: toolgatetype.FormatUSD(gr.TotalUSD), Count: gr.Count}
	}
	out.TotalUSD = toolgatetype.FormatUSD(total)
	return out
}
