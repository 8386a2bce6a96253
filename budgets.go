package toolgate

import (
	"context"
	"slices"
	"time"

	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/internal/spendlimits"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Budgets a call counts in come from its principal (BudgetDefinition's
// Members) and, for callers signed in with an access token, from the
// token's claims (its Claims), which ride in the request's context.

// claimsKey is the context key of a caller's token claims.
type claimsKey struct{}

// WithTokenClaims returns ctx carrying the claims of the access token the
// caller signed in with: each claim's string value, or the strings of an
// array claim. Quote, Call and Prepare match them against the budgets'
// Claims, so a person from the identity provider counts in their team's
// budget with no change to the configuration. The doors (the HTTP API,
// the MCP server) set them for token callers; an embedder that verifies
// its own tokens sets them itself. API-key callers carry none.
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
	if g.budgets == nil {
		return []toolgatetype.Budget{}, nil
	}
	return g.budgetStates(ctx, g.budgets.Nodes())
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
	if g.budgets == nil {
		return nil
	}
	var out []*budgets.Node
	for _, n := range g.budgets.Nodes() {
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

// BudgetSpend sums what a budget's calls were charged, of every member
// and of its descendants' members, grouped by f.GroupBy: tool (the
// default, as Spend's), day (in the budget's time zone) or principal.
// Amounts held by calls in flight or ambiguous are not in it: it is what
// was charged.
//
// It counts whole days of the budget's time zone: those [f.Since,
// f.Until) touches, each call on the day it was admitted. Since defaults
// to the start of the budget's current window when it has limits of one
// window only (a weekly budget's ISO week, a daily one's day: the spend
// its limit counts), else of the current month; Until to now. f.FromDay and f.ToDay
// name the first and the last day (included) as dates of the budget's
// calendar instead, so that whoever asks for a month need not know the
// budget's offset on its first and last day. The summary's Since and
// Until are the bounds of the days counted. An approver the budget does
// not name (directly or through an ancestor) gets not_found, as does an
// unknown budget; a bad filter is invalid_request naming the parameter
// (since, until).
func (g *Gateway) BudgetSpend(ctx context.Context, approver, budget string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	if err := validPrincipal(approver); err != nil {
		return nil, err
	}
	var n *budgets.Node
	if g.budgets != nil {
		n = g.budgets.Get(budget)
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
