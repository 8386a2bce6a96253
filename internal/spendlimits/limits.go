// Package spendlimits builds the spend and rate limits a call is admitted
// under, a principal's and its budgets', explains those that are short,
// previews them in a quote, and makes the budget alerts a charge or a
// refusal causes.
package spendlimits

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The defaults for every principal, where neither the operator nor the
// caller set a limit: $25 per call, $100 a UTC day, $1000 a UTC month, 60
// calls a minute, 1000 an hour.
var (
	defaultMaxPerCallUSD      = decimal.RequireFromString("25")
	defaultDailyLimitUSD      = decimal.RequireFromString("100")
	defaultMonthlyLimitUSD    = decimal.RequireFromString("1000")
	defaultRateLimitPerMinute = 60
	defaultRateLimitPerHour   = 1000
)

// Limits are a principal's limits once defaults, the operator's
// settings and the caller's own are layered.
type Limits struct {
	MaxPerCall, Daily, Monthly decimal.Decimal
	PerMinute, PerHour         int
	Tool                       *ToolLimits // nil when nothing is set for the tool
}

// ToolLimits are the limits on one tool.
type ToolLimits struct {
	Allowed                    bool
	MaxPerCall, Daily, Monthly *decimal.Decimal
	PerMinute, PerHour         *int
}

// Defaults are the limits of a principal where neither the operator nor
// the caller set one.
func Defaults() Limits {
	return Limits{
		MaxPerCall: defaultMaxPerCallUSD, Daily: defaultDailyLimitUSD, Monthly: defaultMonthlyLimitUSD,
		PerMinute: defaultRateLimitPerMinute, PerHour: defaultRateLimitPerHour,
	}
}

// Apply layers c, the controls of the tool slug among them, on l: the
// operator's as they are, the caller's own (tighten) only where they are
// tighter, since they are a caller's self-restraint, not a way past the
// operator's ceiling.
func (l *Limits) Apply(c toolgatetype.SpendControls, slug string, tighten bool) {
	setDec := func(dst *decimal.Decimal, src *decimal.Decimal) {
		if src != nil && (!tighten || src.LessThan(*dst)) {
			*dst = *src
		}
	}
	setInt := func(dst *int, src *int) {
		if src != nil && (!tighten || *src < *dst) {
			*dst = *src
		}
	}
	setDec(&l.MaxPerCall, c.MaxPerCallUSD)
	setDec(&l.Daily, c.DailyLimitUSD)
	setDec(&l.Monthly, c.MonthlyLimitUSD)
	setInt(&l.PerMinute, c.RateLimitPerMinute)
	setInt(&l.PerHour, c.RateLimitPerHour)

	tc, ok := c.Tools[slug]
	if !ok {
		return
	}
	if l.Tool == nil {
		l.Tool = &ToolLimits{Allowed: true}
	}
	t := l.Tool
	if tc.Allowed != nil && (!tighten || !*tc.Allowed) {
		t.Allowed = *tc.Allowed
	}
	setOptDec := func(dst **decimal.Decimal, src *decimal.Decimal) {
		if src != nil && (!tighten || *dst == nil || src.LessThan(**dst)) {
			v := *src
			*dst = &v
		}
	}
	setOptInt := func(dst **int, src *int) {
		if src != nil && (!tighten || *dst == nil || *src < **dst) {
			v := *src
			*dst = &v
		}
	}
	setOptDec(&t.MaxPerCall, tc.MaxPerCallUSD)
	setOptDec(&t.Daily, tc.DailyLimitUSD)
	setOptDec(&t.Monthly, tc.MonthlyLimitUSD)
	setOptInt(&t.PerMinute, tc.RateLimitPerMinute)
	setOptInt(&t.PerHour, tc.RateLimitPerHour)
}

// limit kinds, in the order storage limits are built, so a failure's index
// says which violation string it is.
type limitKind int

const (
	limitGlobalDaily limitKind = iota
	limitGlobalMonthly
	limitToolDaily
	limitToolMonthly
	limitGlobalMinute
	limitGlobalHour
	limitToolMinute
	limitToolHour
	// limitBudget is any limit of a budget, which its budgetLimit says.
	limitBudget
)

// Built is one limit as the store counts it, and what it means.
type Built struct {
	kind   limitKind
	window time.Duration // for rate limits: how long a call counts
	Limit  storage.Limit
	// budget is the budget's limit this is (limitBudget); nil otherwise.
	budget *budgetLimit
}

// Build turns effective limits into the windows the store counts:
// spend over the current UTC day and month, calls over the last minute and hour.
func (l Limits) Build(toolID string, now time.Time) []Built {
	day, month := spendPeriods(now)
	spend := func(kind limitKind, tool string, since time.Time, max decimal.Decimal) Built {
		return Built{kind: kind, Limit: storage.Limit{ToolID: tool, Measure: storage.MeasureSpend, Since: since, Max: max}}
	}
	calls := func(kind limitKind, tool string, window time.Duration, max int) Built {
		return Built{kind: kind, window: window, Limit: storage.Limit{
			ToolID: tool, Measure: storage.MeasureCalls, Since: now.Add(-window), Max: decimal.NewFromInt(int64(max)),
		}}
	}
	out := []Built{
		spend(limitGlobalDaily, "", day, l.Daily),
		spend(limitGlobalMonthly, "", month, l.Monthly),
	}
	if t := l.Tool; t != nil {
		if t.Daily != nil {
			out = append(out, spend(limitToolDaily, toolID, day, *t.Daily))
		}
		if t.Monthly != nil {
			out = append(out, spend(limitToolMonthly, toolID, month, *t.Monthly))
		}
	}
	out = append(out,
		calls(limitGlobalMinute, "", time.Minute, l.PerMinute),
		calls(limitGlobalHour, "", time.Hour, l.PerHour))
	if t := l.Tool; t != nil {
		if t.PerMinute != nil {
			out = append(out, calls(limitToolMinute, toolID, time.Minute, *t.PerMinute))
		}
		if t.PerHour != nil {
			out = append(out, calls(limitToolHour, toolID, time.Hour, *t.PerHour))
		}
	}
	return out
}

func spendViolation(kind limitKind, max decimal.Decimal) string {
	switch kind {
	case limitGlobalDaily:
		return "Call would exceed global daily limit of $" + usd(max)
	case limitGlobalMonthly:
		return "Call would exceed global monthly limit of $" + usd(max)
	case limitToolDaily:
		return "Call would exceed this tool's daily limit of $" + usd(max)
	case limitToolMonthly:
		return "Call would exceed this tool's monthly limit of $" + usd(max)
	}
	return ""
}

// SpendLimitError refuses a call that would break spend controls.
func SpendLimitError(violations []string) *toolgatetype.Error {
	return &toolgatetype.Error{Code: toolgatetype.CodeSpendLimitExceeded, Message: "the call would break your spend controls", Violations: violations}
}

// Explain reports rate limits before spend limits: a rate-limited caller
// should wait, not raise a budget. A spend refusal names in error.budget
// the first budget short, nearest the principal, for requested (the
// call's amount).
func Explain(built []Built, le *storage.LimitError, requested decimal.Decimal, now time.Time) *toolgatetype.Error {
	var violations []string
	var retryAt time.Time
	var refusal *toolgatetype.BudgetRefusal
	refusalAt := len(built)
	for _, f := range le.Failures {
		b := built[f.Index]
		if b.Limit.Measure == storage.MeasureCalls {
			at := f.Oldest.Add(b.window)
			if f.Oldest.IsZero() {
				at = now.Add(b.window) // a limit of zero never frees up; say when to look again
			}
			if at.After(retryAt) {
				retryAt = at
			}
			continue
		}
		if b.budget == nil {
			violations = append(violations, spendViolation(b.kind, b.Limit.Max))
			continue
		}
		violations = append(violations, b.budget.violation(b.Limit.Max))
		if f.Index < refusalAt {
			refusal, refusalAt = b.budget.refusal(b.Limit.Max, f.Used, requested), f.Index
		}
	}
	if !retryAt.IsZero() {
		// A call stays in its window up to and including oldest+window, so
		// the first whole second strictly after that is when a retry succeeds.
		wait := retryAt.Sub(now).Truncate(time.Second) + time.Second
		return &toolgatetype.Error{Code: toolgatetype.CodeRateLimited, Message: fmt.Sprintf("too many calls; retry in %d seconds", int(wait.Seconds())), RetryAfter: wait}
	}
	return Refusal(violations, refusal)
}

// Refusal refuses a call that would break spend controls, naming in
// error.budget the first budget short, when one is (nil otherwise). The
// HTTP call and MCP's tools/call word it alike.
func Refusal(violations []string, budget *toolgatetype.BudgetRefusal) *toolgatetype.Error {
	e := SpendLimitError(violations)
	if budget != nil {
		e.Budget = budget
		if len(violations) == 1 {
			// Only a budget is short: say which, as its violation does.
			e.Message = "the call would exceed a budget: " + violations[0]
		}
	}
	return e
}

// Violation strings that do not depend on usage.
const violationToolBlocked = "This tool is blocked by its spend control"

// StaticViolations are the checks that need no history: the tool allowed at
// all, and the per-call maximums.
func (l Limits) StaticViolations(total decimal.Decimal) []string {
	var v []string
	if total.GreaterThan(l.MaxPerCall) {
		v = append(v, "Call cost exceeds global per-call limit of $"+usd(l.MaxPerCall))
	}
	if t := l.Tool; t != nil {
		if !t.Allowed {
			v = append(v, violationToolBlocked)
		}
		if t.MaxPerCall != nil && total.GreaterThan(*t.MaxPerCall) {
			v = append(v, "Call cost exceeds this tool's per-call limit of $"+usd(*t.MaxPerCall))
		}
	}
	return v
}

// spendPeriods returns the starts of the UTC day and month of now, over
// which spend limits count.
func spendPeriods(now time.Time) (day, month time.Time) {
	now = now.UTC()
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC),
		time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Windows are the spend windows a quote shows, whether or not a limit
// is set on each, indexed by their limitKind: the caller's spend over all
// tools and on this tool, today and this month (UTC). Measuring the tool's
// windows even with no tool limit lets a quote read its controls and its
// spend in one step.
func Windows(toolID string, now time.Time) []storage.Limit {
	day, month := spendPeriods(now)
	w := make([]storage.Limit, limitToolMonthly+1)
	w[limitGlobalDaily] = storage.Limit{Measure: storage.MeasureSpend, Since: day}
	w[limitGlobalMonthly] = storage.Limit{Measure: storage.MeasureSpend, Since: month}
	w[limitToolDaily] = storage.Limit{ToolID: toolID, Measure: storage.MeasureSpend, Since: day}
	w[limitToolMonthly] = storage.Limit{ToolID: toolID, Measure: storage.MeasureSpend, Since: month}
	return w
}

// PreviewControls is the spend decision a quote shows: the same checks the
// call will make, against what is used now (used, measured over
// Windows).
func PreviewControls(l Limits, used []decimal.Decimal, total decimal.Decimal) toolgatetype.Controls {
	usedBy := func(k limitKind) decimal.Decimal { return used[k] }
	violations := l.StaticViolations(total)
	check := func(k limitKind, max decimal.Decimal) {
		if usedBy(k).Add(total).GreaterThan(max) {
			violations = append(violations, spendViolation(k, max))
		}
	}
	check(limitGlobalDaily, l.Daily)
	check(limitGlobalMonthly, l.Monthly)
	if t := l.Tool; t != nil {
		if t.Daily != nil {
			check(limitToolDaily, *t.Daily)
		}
		if t.Monthly != nil {
			check(limitToolMonthly, *t.Monthly)
		}
	}
	if violations == nil {
		violations = []string{}
	}
	remaining := func(max, used decimal.Decimal) decimal.Decimal {
		if r := max.Sub(used); r.IsPositive() {
			return r
		}
		return decimal.Zero
	}
	c := toolgatetype.Controls{
		Approved:     len(violations) == 0,
		Violations:   violations,
		RequestedUSD: usd(total),
		Global: toolgatetype.GlobalControls{
			MaxPerCallUSD:       usd(l.MaxPerCall),
			DailyLimitUSD:       usd(l.Daily),
			MonthlyLimitUSD:     usd(l.Monthly),
			RateLimitPerMinute:  l.PerMinute,
			RateLimitPerHour:    l.PerHour,
			DailyUsedUSD:        usd(usedBy(limitGlobalDaily)),
			MonthlyUsedUSD:      usd(usedBy(limitGlobalMonthly)),
			DailyRemainingUSD:   usd(remaining(l.Daily, usedBy(limitGlobalDaily))),
			MonthlyRemainingUSD: usd(remaining(l.Monthly, usedBy(limitGlobalMonthly))),
		},
	}
	if t := l.Tool; t != nil {
		optUSD := func(d *decimal.Decimal) *string {
			if d == nil {
				return nil
			}
			s := usd(*d)
			return &s
		}
		tc := &toolgatetype.ToolControls{
			Allowed:            t.Allowed,
			MaxPerCallUSD:      optUSD(t.MaxPerCall),
			DailyLimitUSD:      optUSD(t.Daily),
			MonthlyLimitUSD:    optUSD(t.Monthly),
			RateLimitPerMinute: t.PerMinute,
			RateLimitPerHour:   t.PerHour,
			DailyUsedUSD:       usd(usedBy(limitToolDaily)),
			MonthlyUsedUSD:     usd(usedBy(limitToolMonthly)),
		}
		if t.Daily != nil {
			r := remaining(*t.Daily, usedBy(limitToolDaily))
			tc.DailyRemainingUSD = optUSD(&r)
		}
		if t.Monthly != nil {
			r := remaining(*t.Monthly, usedBy(limitToolMonthly))
			tc.MonthlyRemainingUSD = optUSD(&r)
		}
		c.Tool = tc
	}
	return c
}

// Validate checks controls a caller sets: amounts non-negative with at
// most 4 decimals, counts non-negative.
func Validate(c toolgatetype.SpendControls) *toolgatetype.Error {
	checkDec := func(name string, d *decimal.Decimal) *toolgatetype.Error {
		if d == nil {
			return nil
		}
		// The bound first: an amount given as a decimal by a Go program
		// never came through ParseAmount.
		if err := toolgatetype.CheckAmount(*d); err != nil {
			return toolgatetype.Errorf(toolgatetype.CodeInvalidRequest, "%s %s", name, err)
		}
		if d.IsNegative() || d.Exponent() < -4 {
			return toolgatetype.Errorf(toolgatetype.CodeInvalidRequest, "%s must be a non-negative amount with at most 4 decimals", name)
		}
		return nil
	}
	checkInt := func(name string, n *int) *toolgatetype.Error {
		if n != nil && *n < 0 {
			return toolgatetype.Errorf(toolgatetype.CodeInvalidRequest, "%s must not be negative", name)
		}
		return nil
	}
	errs := []*toolgatetype.Error{
		checkDec("maxPerCallUsd", c.MaxPerCallUSD), checkDec("dailyLimitUsd", c.DailyLimitUSD),
		checkDec("monthlyLimitUsd", c.MonthlyLimitUSD),
		checkInt("rateLimitPerMinute", c.RateLimitPerMinute), checkInt("rateLimitPerHour", c.RateLimitPerHour),
	}
	for slug, t := range c.Tools {
		errs = append(errs,
			checkDec("tools."+slug+".maxPerCallUsd", t.MaxPerCallUSD), checkDec("tools."+slug+".dailyLimitUsd", t.DailyLimitUSD),
			checkDec("tools."+slug+".monthlyLimitUsd", t.MonthlyLimitUSD),
			checkInt("tools."+slug+".rateLimitPerMinute", t.RateLimitPerMinute), checkInt("tools."+slug+".rateLimitPerHour", t.RateLimitPerHour))
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// usd formats an amount the way it goes on the wire: exactly 4 decimals.
func usd(d decimal.Decimal) string { return toolgatetype.FormatUSD(d) }
