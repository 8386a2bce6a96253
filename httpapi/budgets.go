package httpapi

import (
	"net/http"
	"time"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// BudgetsPath is where an approver reads the budgets it oversees.
const BudgetsPath = "/v1/budgets"

// BudgetSpendPath is where an approver reads what budget id's calls were
// charged.
func BudgetSpendPath(id string) string { return BudgetsPath + "/" + id + "/spend" }

// listBudgets serves GET /v1/budgets: the budgets that name the approver,
// and their descendants, each window's use against its limit.
func (h *Handler) listBudgets(w http.ResponseWriter, r *http.Request) {
	list, err := h.gw.BudgetsFor(r.Context(), approverOf(r))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if list == nil {
		list = []toolgatetype.Budget{} // [] on the wire, never null
	}
	httpx.WriteJSON(w, http.StatusOK, toolgatetype.BudgetList{Budgets: list})
}

// budgetSpend serves GET /v1/budgets/{id}/spend?groupBy=&from=&to=: what
// the budget's calls were charged, in /v1/spend's shape. from and to are
// days of the budget's calendar (YYYY-MM-DD), both included; a budget the
// approver may not see is not found, as an unknown one is.
func (h *Handler) budgetSpend(w http.ResponseWriter, r *http.Request) {
	q, err := queryOf(r, "groupBy", "from", "to")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	f := toolgatetype.SpendFilter{GroupBy: toolgatetype.SpendGrouping(q["groupBy"])}
	switch f.GroupBy {
	case "", toolgatetype.SpendByDay, toolgatetype.SpendByPrincipal, toolgatetype.SpendByTool:
	default:
		h.writeError(w, r, paramError("groupBy", "groupBy must be day, principal or tool"))
		return
	}
	from, err := dayParam(q, "from")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	to, err := dayParam(q, "to")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		h.writeError(w, r, paramError("to", "to must not be before from"))
		return
	}
	f.Since = from
	if !to.IsZero() {
		f.Until = to.AddDate(0, 0, 1) // to is included: the window ends as the next day begins
	}
	sum, err := h.gw.BudgetSpend(r.Context(), approverOf(r), r.PathValue("id"), f)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, sum)
}

// dayParam reads a calendar day, YYYY-MM-DD, as midnight of that date in
// UTC: the date is what counts, and the gateway reads it in the budget's
// time zone. Absent is the zero time.
func dayParam(q map[string]string, name string) (time.Time, error) {
	s, ok := q[name]
	if !ok {
		return time.Time{}, nil
	}
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, paramError(name, "%s must be a day as YYYY-MM-DD, such as 2030-03-15", name)
	}
	return d, nil
}
