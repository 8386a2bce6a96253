package budgets

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/textcheck"
	"github.com/toolgate/toolgate/toolgatetype"
)

// idPattern is a budget id: it names the budget in metric labels, webhook
// ids and URL paths, so it keeps to characters each of them takes as is.
var idPattern = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// fieldError is New's error: one line that starts with the field's path in
// the configuration, so an operator finds it at once.
func fieldError(i int, field, format string, args ...any) error {
	path := fmt.Sprintf("budgets[%d]", i)
	if field != "" {
		path += "." + field
	}
	return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
}

// node checks one definition and builds its node, with no parent yet.
func node(i int, d toolgatetype.BudgetDefinition) (*Node, error) {
	if !idPattern.MatchString(d.ID) {
		return nil, fieldError(i, "id", "%q must be 1 to 64 characters of a-z, 0-9, \"-\" and \"_\"", d.ID)
	}
	if err := textFields(i, d); err != nil {
		return nil, err
	}
	n := &Node{
		ID: d.ID, Name: d.Name, Location: time.UTC,
		Members: d.Members, Approvers: d.Approvers, Claims: d.Claims, Everyone: d.Everyone,
		index: i,
	}
	if d.Everyone && len(d.Members) > 0 {
		// Everyone is in it already: a list beside it would read as if
		// only they were.
		return nil, fieldError(i, "members", "a budget of everyone names no members: every principal counts in it")
	}
	if d.Everyone && len(d.Claims) > 0 {
		return nil, fieldError(i, "claims", "a budget of everyone names no claims: every principal counts in it")
	}
	if n.Name == "" {
		n.Name = d.ID
	}
	if d.TimeZone != "" {
		loc, err := time.LoadLocation(d.TimeZone)
		if err != nil || d.TimeZone == "Local" {
			return nil, fieldError(i, "timeZone", "unknown time zone %q", d.TimeZone)
		}
		n.Location = loc
	}
	var err error
	if n.Limits, err = windowLimits(i, "", d.DailyLimitUSD, d.WeeklyLimitUSD, d.MonthlyLimitUSD); err != nil {
		return nil, err
	}
	if r := d.RateLimitPerMinute; r != nil {
		if *r < 1 {
			// Zero would refuse every call of every member: a budget that
			// blocks is said with a tool's "allowed": false, not a rate.
			return nil, fieldError(i, "rateLimitPerMinute", "%d must be at least 1: calls per minute shared by the members", *r)
		}
		v := *r
		n.RatePerMinute = &v
	}
	for _, m := range d.Members {
		if m == "" {
			return nil, fieldError(i, "members", "an empty principal id")
		}
	}
	for _, a := range d.Approvers {
		if a == "" {
			return nil, fieldError(i, "approvers", "an empty approver id")
		}
	}
	// Sorted, so that of several bad claims the same one is named on
	// every start.
	for _, name := range slices.Sorted(maps.Keys(d.Claims)) {
		switch value := d.Claims[name]; {
		case strings.TrimSpace(name) == "":
			return nil, fieldError(i, "claims", "a claim needs a name")
		case apikey.IsEnvelopeClaim(name):
			// A budget that can never match would be accepted and count
			// no one, silently.
			return nil, fieldError(i, fmt.Sprintf("claims[%q]", name),
				"%q is about the token, not its bearer, and is never matched: use a claim that names the person's team, such as groups", name)
		case value == "":
			return nil, fieldError(i, fmt.Sprintf("claims[%q]", name), "a claim needs a value")
		}
	}
	if len(d.Tools) > 0 {
		n.Tools = make(map[string]ToolLimits, len(d.Tools))
		// Sorted, so that of several bad tools the same one is named on
		// every start.
		for _, slug := range slices.Sorted(maps.Keys(d.Tools)) {
			tl := d.Tools[slug]
			field := fmt.Sprintf("tools[%q]", slug)
			if slug == "" {
				return nil, fieldError(i, "tools", "a tool needs a slug")
			}
			limits, err := windowLimits(i, field+".", tl.DailyLimitUSD, tl.WeeklyLimitUSD, tl.MonthlyLimitUSD)
			if err != nil {
				return nil, err
			}
			n.Tools[slug] = ToolLimits{Allowed: tl.Allowed == nil || *tl.Allowed, Limits: limits}
		}
	}
	if len(d.Alerts) > 0 {
		for j, f := range d.Alerts {
			if !(f > 0 && f <= 1) {
				return nil, fieldError(i, fmt.Sprintf("alerts[%d]", j), "%v is not a fraction in (0, 1]", f)
			}
		}
		n.Alerts = slices.Compact(slices.Sorted(slices.Values(d.Alerts)))
	}
	if !n.limited() {
		return nil, fieldError(i, "", "a budget needs a limit (dailyLimitUsd, weeklyLimitUsd, monthlyLimitUsd, rateLimitPerMinute or a tool's)")
	}
	return n, nil
}

// limited reports whether the budget limits anything: a window, a rate, or
// a tool (a blocked tool is a limit too).
func (n *Node) limited() bool {
	if len(n.Limits) > 0 || n.RatePerMinute != nil {
		return true
	}
	for _, t := range n.Tools {
		if !t.Allowed || len(t.Limits) > 0 {
			return true
		}
	}
	return false
}

// windowLimits checks the amounts of a budget's (or a tool's, prefix
// "tools[...].") windows; nil when none is set.
func windowLimits(i int, prefix string, daily, weekly, monthly *decimal.Decimal) (map[toolgatetype.BudgetWindowKind]decimal.Decimal, error) {
	var m map[toolgatetype.BudgetWindowKind]decimal.Decimal
	for _, w := range []struct {
		kind  toolgatetype.BudgetWindowKind
		field string
		v     *decimal.Decimal
	}{
		{toolgatetype.BudgetDaily, "dailyLimitUsd", daily},
		{toolgatetype.BudgetWeekly, "weeklyLimitUsd", weekly},
		{toolgatetype.BudgetMonthly, "monthlyLimitUsd", monthly},
	} {
		if w.v == nil {
			continue
		}
		if err := toolgatetype.CheckAmount(*w.v); err != nil {
			return nil, fieldError(i, prefix+w.field, "%s %v", w.v.String(), err)
		}
		if w.v.Sign() < 0 {
			return nil, fieldError(i, prefix+w.field, "%s must not be negative", w.v.String())
		}
		if m == nil {
			m = make(map[toolgatetype.BudgetWindowKind]decimal.Decimal, 3)
		}
		m[w.kind] = *w.v
	}
	return m, nil
}

// checkCycles refuses a parent chain that comes back to where it started,
// naming the chain from the cycle's first budget in the configuration
// ("acme -> search -> acme") at the field of its last, whose parent is the
// one that closes it when the configuration is read in order.
func (t *Tree) checkCycles() error {
	// done marks budgets whose chain is known to end at a root.
	done := make(map[*Node]bool, len(t.nodes))
	for _, start := range t.nodes {
		onPath := map[*Node]bool{}
		var path []*Node
		for n := start; n != nil && !done[n]; n = n.Parent {
			if onPath[n] {
				return cycleError(n)
			}
			onPath[n] = true
			path = append(path, n)
		}
		for _, n := range path {
			done[n] = true
		}
	}
	return nil
}

// cycleError names the cycle that n is on.
func cycleError(n *Node) error {
	cycle := []*Node{n}
	for c := n.Parent; c != n; c = c.Parent {
		cycle = append(cycle, c)
	}
	byIndex := func(a, b *Node) int { return a.index - b.index }
	first, last := slices.MinFunc(cycle, byIndex), slices.MaxFunc(cycle, byIndex)
	ids := []string{first.ID}
	for c := first.Parent; c != first; c = c.Parent {
		ids = append(ids, c.ID)
	}
	ids = append(ids, first.ID)
	return fieldError(last.index, "parent", "%q and %q make a cycle: %s", last.ID, last.Parent.ID, strings.Join(ids, " -> "))
}

// textFields refuses a budget whose name, members, approvers or claims
// hold text no store can keep or page can show as sent (see textcheck):
// its name is in every refusal's violation and event, its members are
// principals kept with their calls.
func textFields(i int, d toolgatetype.BudgetDefinition) error {
	if p := textcheck.Problem(d.Name); p != "" {
		return fieldError(i, "name", "%s", p)
	}
	for _, list := range []struct {
		field string
		ids   []string
	}{{"members", d.Members}, {"approvers", d.Approvers}} {
		for j, id := range list.ids {
			if p := textcheck.Problem(id); p != "" {
				return fieldError(i, fmt.Sprintf("%s[%d]", list.field, j), "%s", p)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.Claims)) {
		value := d.Claims[name]
		if p := textcheck.Problem(name); p != "" {
			return fieldError(i, "claims", "a claim's name %s", p)
		}
		if p := textcheck.Problem(value); p != "" {
			return fieldError(i, "claims."+name, "%s", p)
		}
	}
	return nil
}
