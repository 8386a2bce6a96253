package approvalpage

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// SpendPagePath is where a signed-in approver sees the budgets it
// oversees, relative to where the handlers are mounted.
const SpendPagePath = httpx.ApprovalPagesPath + "/" + spendPageName

// spendPageName is the Spend page's place among the approval requests'.
const spendPageName = "spend"

// chartDays is how many days the daily chart shows, today included.
const chartDays = 30

// topCount is how many principals and tools each budget's tops name.
const topCount = 5

// budgetView is one budget as the Spend page shows it.
type budgetView struct {
	ID, Name, Parent string
	Windows          []windowView
	Chart            chartView
	TopPrincipals    []topRow
	TopTools         []topRow
	MonthTotalUSD    string
}

// windowView is one window of a budget: its use against its limit, as a
// bar and in words.
type windowView struct {
	Kind                       string
	LimitUSD, UsedUSD, LeftUSD string
	Percent                    int    // of the limit used, 0 to 100 (the bar's length)
	PercentText                string // the same, unclamped: "112%"
	Level                      string // "ok", "high" (from 80%) or "over" (the limit reached)
	Resets                     timeView
	BarWidth                   string // the bar's length in the SVG's units, "0" to "100"
	BarLabel                   string
}

// topRow is a principal or a tool among a budget's tops of the month.
type topRow struct {
	Key, TotalUSD string
	Count         int64
}

// budgetView fetches what the Spend page shows of one budget.
func (h *Handler) budgetView(r *http.Request, approver string, b toolgatetype.Budget, now time.Time) (budgetView, error) {
	v := budgetView{ID: b.ID, Name: b.Name}
	if b.Parent != nil {
		v.Parent = *b.Parent
	}
	for _, kind := range []toolgatetype.BudgetWindowKind{toolgatetype.BudgetDaily, toolgatetype.BudgetWeekly, toolgatetype.BudgetMonthly} {
		w, ok := b.Windows[kind]
		if !ok {
			continue
		}
		v.Windows = append(v.Windows, windowOf(kind, w, now))
	}

	// The chart's days are the budget's last chartDays dates, today's
	// included, asked for as dates: the gateway places them in the
	// budget's zone, and the page names the same dates as it does.
	keys := chartDates(now, zoneOf(b.TimeZone))
	days, err := h.gw.BudgetSpend(r.Context(), approver, b.ID, toolgatetype.SpendFilter{
		GroupBy: toolgatetype.SpendByDay, FromDay: keys[0], ToDay: keys[len(keys)-1],
	})
	if err != nil {
		return v, err
	}
	v.Chart = dailyChart(b.Name, keys, days)

	// The month's tops: from the first day of the budget's current month,
	// until now (the gateway's default window follows the budget's limit,
	// a week for a weekly budget).
	local := now.In(zoneOf(b.TimeZone))
	monthStart := time.Date(local.Year(), local.Month(), 1, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
	for _, t := range []struct {
		by   toolgatetype.SpendGrouping
		into *[]topRow
	}{{toolgatetype.SpendByPrincipal, &v.TopPrincipals}, {toolgatetype.SpendByTool, &v.TopTools}} {
		sum, err := h.gw.BudgetSpend(r.Context(), approver, b.ID, toolgatetype.SpendFilter{GroupBy: t.by, FromDay: monthStart})
		if err != nil {
			return v, err
		}
		*t.into = topOf(sum.Groups)
		v.MonthTotalUSD = sum.TotalUSD
	}
	return v, nil
}

// windowOf shows one window: how much of its limit is used, as a bar
// clamped to its length and as figures.
func windowOf(kind toolgatetype.BudgetWindowKind, w toolgatetype.BudgetWindow, now time.Time) windowView {
	v := windowView{Kind: string(kind), LimitUSD: w.LimitUSD, UsedUSD: w.UsedUSD, LeftUSD: w.RemainingUSD, Resets: when(w.ResetsAt, now), Level: "ok"}
	limit, errL := decimal.NewFromString(w.LimitUSD)
	used, errU := decimal.NewFromString(w.UsedUSD)
	pct := 0
	switch {
	case errL != nil || errU != nil:
	case limit.IsPositive():
		pct = int(used.Mul(decimal.NewFromInt(100)).Div(limit).Floor().IntPart())
	case used.IsPositive() || limit.IsZero():
		pct = 100 // a zero limit is all used
	}
	v.PercentText = fmt.Sprintf("%d%%", pct)
	v.Percent = min(max(pct, 0), 100)
	switch {
	case pct >= 100:
		v.Level = "over"
	case pct >= 80:
		v.Level = "high"
	}
	v.BarWidth = fmt.Sprint(v.Percent)
	v.BarLabel = fmt.Sprintf("%s of the %s limit used", v.PercentText, kind)
	return v
}

// topOf is the topCount largest groups, largest first (ties by key).
func topOf(groups []toolgatetype.SpendGroup) []topRow {
	type g struct {
		row   topRow
		total decimal.Decimal
	}
	all := make([]g, 0, len(groups))
	for _, x := range groups {
		t, err := decimal.NewFromString(x.TotalUSD)
		if err != nil {
			continue
		}
		all = append(all, g{topRow{Key: x.Key, TotalUSD: x.TotalUSD, Count: x.Count}, t})
	}
	slices.SortFunc(all, func(a, b g) int {
		if c := b.total.Cmp(a.total); c != 0 {
			return c
		}
		return cmp.Compare(a.row.Key, b.row.Key)
	})
	out := make([]topRow, 0, topCount)
	for i := 0; i < len(all) && i < topCount; i++ {
		out = append(out, all[i].row)
	}
	return out
}

// spendPage answers GET /approvals/spend (see approvalPage).
func (h *Handler) spendPage(w http.ResponseWriter, r *http.Request) {
	sess, ok := h.pageSession(r)
	if !ok {
		h.renderSignIn(w, r, http.StatusOK, "", "Sign in with your approver key to see the spend of the budgets you oversee.")
		return
	}
	h.renderSpend(w, r, sess)
}

// spendPageForm answers POST /approvals/spend: sign in or out.
func (h *Handler) spendPageForm(w http.ResponseWriter, r *http.Request) {
	h.pageForm(w, r, spendForm)
}

// renderSpend shows the signed-in approver's budgets.
func (h *Handler) renderSpend(w http.ResponseWriter, r *http.Request, sess Session) {
	budgets, err := h.gw.BudgetsFor(r.Context(), sess.Approver)
	if err != nil {
		h.logError(r, err)
		h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not read your budgets. Try again.")
		return
	}
	data := h.pageData(r, &sess, "Spend of your budgets")
	now := h.clock.Now()
	for _, b := range budgets {
		v, err := h.budgetView(r, sess.Approver, b, now)
		if err != nil {
			h.logError(r, err)
			h.renderMessage(w, r, http.StatusInternalServerError, "The gateway could not read your budgets' spend. Try again.")
			return
		}
		data.Budgets = append(data.Budgets, v)
	}
	h.render(w, r, http.StatusOK, "spend", data)
}
