package spendlimits

import (
	"time"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/internal/budgets"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetLimit is what one of a call's limits means when a budget puts it
// there: a window of the budget's spend, over every tool or on the called
// one, or the budget's rate.
type budgetLimit struct {
	node *budgets.Node
	// window is the calendar window of a spend limit; "" for the rate.
	window toolgatetype.BudgetWindowKind
	// tool is the called tool's slug when the limit is the budget's on
	// that tool; "" for its limits over every tool.
	tool     string
	resetsAt time.Time
}

// AppendBudgetLimits appends the limits nodes put on a call of tool at now:
// for each budget, nearest first, its spend windows, its windows on the
// tool (nil tool: none, for a budget's state) and, with rates, its rate
// over the last minute. The order makes the
// first budget limit the store finds short the one nearest the principal.
// A quote measures spend only (rates false), as it does for the principal.
func AppendBudgetLimits(out []Built, nodes []*budgets.Node, tool *registry.Tool, now time.Time, rates bool) []Built {
	spend := func(n *budgets.Node, kind toolgatetype.BudgetWindowKind, toolID, slug string, max decimal.Decimal) Built {
		_, end, from := n.Window(kind, now)
		return Built{
			kind:   limitBudget,
			Limit:  storage.Limit{Budget: n.ID, ToolID: toolID, Measure: storage.MeasureSpend, FromDay: from, Max: max},
			budget: &budgetLimit{node: n, window: kind, tool: slug, resetsAt: end},
		}
	}
	for _, n := range nodes {
		for _, kind := range budgets.Windows {
			if max, ok := n.Limits[kind]; ok {
				out = append(out, spend(n, kind, "", "", max))
			}
		}
		if tool == nil {
			continue
		}
		if t, ok := n.Tools[tool.Slug]; ok {
			for _, kind := range budgets.Windows {
				if max, ok := t.Limits[kind]; ok {
					out = append(out, spend(n, kind, tool.ID, tool.Slug, max))
				}
			}
		}
		if rates && n.RatePerMinute != nil {
			out = append(out, Built{
				kind:   limitBudget,
				window: time.Minute,
				Limit: storage.Limit{
					Budget: n.ID, Measure: storage.MeasureCalls, Since: now.Add(-time.Minute),
					Max: decimal.NewFromInt(int64(*n.RatePerMinute)),
				},
				budget: &budgetLimit{node: n},
			})
		}
	}
	return out
}

// BudgetDays are the budgets a call counts in, each with the call's day in
// its time zone, for the store to record with the execution; nil when none.
func BudgetDays(nodes []*budgets.Node, now time.Time) []storage.BudgetDay {
	if len(nodes) == 0 {
		return nil
	}
	out := make([]storage.BudgetDay, len(nodes))
	for i, n := range nodes {
		out[i] = storage.BudgetDay{Budget: n.ID, Day: n.Day(now)}
	}
	return out
}

// BlockedByBudgets are the violations of budgets that block the tool
// (allowed false), nearest first.
func BlockedByBudgets(nodes []*budgets.Node, slug string) []string {
	var v []string
	for _, n := range nodes {
		if t, ok := n.Tools[slug]; ok && !t.Allowed {
			v = append(v, "This tool is blocked by the "+n.Name+" budget")
		}
	}
	return v
}

// violation is how a refusal and a quote word a spend limit of the budget
// that the call would exceed.
func (b *budgetLimit) violation(max decimal.Decimal) string {
	s := "Call would exceed the " + b.node.Name + " budget's " + string(b.window) + " limit"
	if b.tool != "" {
		s += " for this tool"
	}
	return s + " of $" + usd(max)
}

// refusal is error.budget for a call the limit refused, which held used
// before it.
func (b *budgetLimit) refusal(max, used, requested decimal.Decimal) *toolgatetype.BudgetRefusal {
	return &toolgatetype.BudgetRefusal{
		ID: b.node.ID, Window: b.window, Tool: b.tool,
		LimitUSD: usd(max), UsedUSD: usd(used), RequestedUSD: usd(requested),
		ResetsAt: b.resetsAt.UTC(),
	}
}

// budgetWindow is a window's state in a Budget.
func budgetWindow(max, used decimal.Decimal, resetsAt time.Time) toolgatetype.BudgetWindow {
	remaining := max.Sub(used)
	if remaining.IsNegative() {
		remaining = decimal.Zero
	}
	return toolgatetype.BudgetWindow{LimitUSD: usd(max), UsedUSD: usd(used), RemainingUSD: usd(remaining), ResetsAt: resetsAt.UTC()}
}

// BudgetState is a budget's state, its windows filled from built, the
// limits measured (used, one each) among which the budget's own windows
// are; a limit of another budget or on a tool is skipped.
func BudgetState(n *budgets.Node, built []Built, used []decimal.Decimal) toolgatetype.Budget {
	b := toolgatetype.Budget{ID: n.ID, Name: n.Name, TimeZone: n.Location.String(), Windows: make(map[toolgatetype.BudgetWindowKind]toolgatetype.BudgetWindow, len(n.Limits))}
	if n.Parent != nil {
		p := n.Parent.ID
		b.Parent = &p
	}
	for i, l := range built {
		if bl := l.budget; bl != nil && bl.node == n && bl.tool == "" && bl.window != "" {
			b.Windows[bl.window] = budgetWindow(l.Limit.Max, used[i], bl.resetsAt)
		}
	}
	return b
}

// PreviewBudgets adds the budgets to a quote's controls: each budget's
// state, nearest first, and a violation for each blocked tool and each
// window the call would take over its limit. built are the budget limits
// measured in the quote's reads, used what each holds. It returns the
// first budget short, nearest the principal (nil: none), which a refusal
// made on the quote names.
func PreviewBudgets(c *toolgatetype.Controls, nodes []*budgets.Node, slug string, built []Built, used []decimal.Decimal, total decimal.Decimal) *toolgatetype.BudgetRefusal {
	var short *toolgatetype.BudgetRefusal
	c.Violations = append(c.Violations, BlockedByBudgets(nodes, slug)...)
	for i, l := range built {
		if used[i].Add(total).GreaterThan(l.Limit.Max) {
			c.Violations = append(c.Violations, l.budget.violation(l.Limit.Max))
			if short == nil {
				short = l.budget.refusal(l.Limit.Max, used[i], total)
			}
		}
	}
	c.Approved = len(c.Violations) == 0
	c.Budgets = make([]toolgatetype.Budget, len(nodes))
	for i, n := range nodes {
		c.Budgets[i] = BudgetState(n, built, used)
	}
	return short
}

// BudgetWindow is one window of a budget that has a limit, over every
// tool, as the store measures it.
type BudgetWindow struct {
	Budget string
	Window toolgatetype.BudgetWindowKind
	Limit  storage.Limit
}

// BudgetWindows are the windows of nodes that have a limit at now, those
// a budget's state shows.
func BudgetWindows(nodes []*budgets.Node, now time.Time) []BudgetWindow {
	built := AppendBudgetLimits(nil, nodes, nil, now, false)
	out := make([]BudgetWindow, 0, len(built))
	for _, b := range built {
		if b.budget == nil || b.budget.window == "" {
			continue
		}
		out = append(out, BudgetWindow{Budget: b.budget.node.ID, Window: b.budget.window, Limit: b.Limit})
	}
	return out
}

// StoreLimits are the limits of built as the store takes them.
func StoreLimits(built []Built) []storage.Limit {
	out := make([]storage.Limit, len(built))
	for i, b := range built {
		out[i] = b.Limit
	}
	return out
}
