package toolgate

import (
	"context"
	"errors"
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

// effectiveLimits are a principal's limits once defaults, the operator's
// settings and the caller's own are layered.
type effectiveLimits struct {
	MaxPerCall, Daily, Monthly decimal.Decimal
	PerMinute, PerHour         int
	Tool                       *toolLimits // nil when nothing is set for the tool
}

type toolLimits struct {
	Allowed                    bool
	MaxPerCall, Daily, Monthly *decimal.Decimal
	PerMinute, PerHour         *int
}

// limitsFor layers a principal's limits: the defaults, the
// operator's controls, then the caller's own (own; nil when none), which
// only ever tighten: they are a caller's self-restraint, not a way past the
// operator's ceiling.
func (g *Gateway) limitsFor(ctx context.Context, principal, slug string, own *toolgatetype.SpendControls) (effectiveLimits, error) {
	l := effectiveLimits{
		MaxPerCall: defaultMaxPerCallUSD, Daily: defaultDailyLimitUSD, Monthly: defaultMonthlyLimitUSD,
		PerMinute: defaultRateLimitPerMinute, PerHour: defaultRateLimitPerHour,
	}
	if g.controls != nil {
		op, err := g.controls.SpendControls(ctx, principal)
		if err != nil {
			return l, internalError(fmt.Errorf("operator spend controls: %w", err))
		}
		l.apply(op, slug, false)
	}
	if own != nil {
		l.apply(*own, slug, true)
	}
	return l, nil
}

func (l *effectiveLimits) apply(c toolgatetype.SpendControls, slug string, tighten bool) {
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
		l.Tool = &toolLimits{Allowed: true}
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

type builtLimit struct {
	kind   limitKind
	window time.Duration // for rate limits: how long a call counts
	limit  storage.Limit
	// budget is the budget's limit this is (limitBudget); nil otherwise.
	budget *budgetLimit
}

// storageLimits turns effective limits into the windows the store counts:
// spend over the current UTC day and month, calls over the last minute and hour.
func (l effectiveLimits) storageLimits(toolID string, now time.Time) []builtLimit {
	day, month := spendPeriods(now)
	spend := func(kind limitKind, tool string, since time.Time, max decimal.Decimal) builtLimit {
		return builtLimit{kind: kind, limit: storage.Limit{ToolID: tool, Measure: storage.MeasureSpend, Since: since, Max: max}}
	}
	calls := func(kind limitKind, tool string, window time.Duration, max int) builtLimit {
		return builtLimit{kind: kind, window: window, limit: storage.Limit{
			ToolID: tool, Measure: storage.MeasureCalls, Since: now.Add(-window), Max: decimal.NewFromInt(int64(max)),
		}}
	}
	out := []builtLimit{
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

// spendLimitError refuses a call that would break spend controls.
func spendLimitError(violations []string) *toolgatetype.Error {
	return &toolgatetype.Error{Code: toolgatetype.CodeSpendLimitExceeded, Message: "the call would break your spend controls", Violations: violations}
}

// limitError reports rate limits before spend limits: a rate-limited caller
// should wait, not raise a budget. A spend refusal names in error.budget
// the first budget short, nearest the principal, for requested (the
// call's amount).
func limitError(built []builtLimit, le *storage.LimitError, requested decimal.Decimal, now time.Time) *toolgatetype.Error {
	var violations []string
	var retryAt time.Time
	var refusal *toolgatetype.BudgetRefusal
	refusalAt := len(built)
	for _, f := range le.Failures {
		b := built[f.Index]
		if b.limit.Measure == storage.MeasureCalls {
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
			violations = append(violations, spendViolation(b.kind, b.limit.Max))
			continue
		}
		violations = append(violations, b.budget.violation(b.limit.Max))
		if f.Index < refusalAt {
			refusal, refusalAt = b.budget.refusal(b.limit.Max, f.Used, requested), f.Index
		}
	}
	if !retryAt.IsZero() {
		// A call stays in its window up to and including oldest+window, so
		// the first whole second strictly after that is when a retry succeeds.
		wait := retryAt.Sub(now).Truncate(time.Second) + time.Second
		return &toolgatetype.Error{Code: toolgatetype.CodeRateLimited, Message: fmt.Sprintf("too many calls; retry in %d seconds", int(wait.Seconds())), RetryAfter: wait}
	}
	return spendRefusal(violations, refusal)
}

// spendRefusal refuses a call that would break spend controls, naming in
// error.budget the first budget short, when one is (nil otherwise). The
// HTTP call and MCP's tools/call word it alike.
func spendRefusal(violations []string, budget *toolgatetype.BudgetRefusal) *toolgatetype.Error {
	e := spendLimitError(violations)
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

// staticViolations are the checks that need no history: the tool allowed at
// all, and the per-call maximums.
func (l effectiveLimits) staticViolations(total decimal.Decimal) []string {
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

// spendWindows are the spend windows a quote shows, whether or not a limit
// is set on each, indexed by their limitKind: the caller's spend over all
// tools and on this tool, today and this month (UTC). Measuring the tool's
// windows even with no tool limit lets a quote read its controls and its
// spend in one step.
func spendWindows(toolID string, now time.Time) []storage.Limit {
	day, month := spendPeriods(now)
	w := make([]storage.Limit, limitToolMonthly+1)
	w[limitGlobalDaily] = storage.Limit{Measure: storage.MeasureSpend, Since: day}
	w[limitGlobalMonthly] = storage.Limit{Measure: storage.MeasureSpend, Since: month}
	w[limitToolDaily] = storage.Limit{ToolID: toolID, Measure: storage.MeasureSpend, Since: day}
	w[limitToolMonthly] = storage.Limit{ToolID: toolID, Measure: storage.MeasureSpend, Since: month}
	return w
}

// previewControls is the spend decision a quote shows: the same checks the
// call will make, against what is used now (used, measured over
// spendWindows).
func previewControls(l effectiveLimits, used []decimal.Decimal, total decimal.Decimal) toolgatetype.Controls {
	usedBy := func(k limitKind) decimal.Decimal { return used[k] }
	violations := l.staticViolations(total)
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
// step of the store: update is handed the stored controls (the zero value
// when none) and what it leaves is validated and stored, so two concurrent
// changes, such as two tools' limits set at once, both survive. update may
// run more than once and must only change its argument; an error it returns
// aborts the change and comes back as it is. It returns the controls stored.
func (g *Gateway) UpdateSpendControls(ctx context.Context, principal string, update func(*toolgatetype.SpendControls) error) (toolgatetype.SpendControls, error) {
	if err := validPrincipal(principal); err != nil {
		return toolgatetype.SpendControls{}, err
	}
	var refused error // update's own error, or the validation's, returned as it is
	c, err := g.store.UpdateSpendControls(ctx, principal, func(c *toolgatetype.SpendControls) error {
		refused = update(c)
		if refused == nil {
			if bad := validateSpendControls(*c); bad != nil {
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

func validateSpendControls(c toolgatetype.SpendControls) *toolgatetype.Error {
	checkDec := func(name string, d *decimal.Decimal) *toolgatetype.Error {
		if d == nil {
			return nil
		}
		// The bound first: an amount given as a decimal by a Go program
		// never came through ParseAmount.
		if err := toolgatetype.CheckAmount(*d); err != nil {
			return newError(toolgatetype.CodeInvalidRequest, "%s %s", name, err)
		}
		if d.IsNegative() || d.Exponent() < -4 {
			return newError(toolgatetype.CodeInvalidRequest, "%s must be a non-negative amount with at most 4 decimals", name)
		}
		return nil
	}
	checkInt := func(name string, n *int) *toolgatetype.Error {
		if n != nil && *n < 0 {
			return newError(toolgatetype.CodeInvalidRequest, "%s must not be negative", name)
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
