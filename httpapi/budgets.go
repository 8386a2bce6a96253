package httpapi

import (
	"errors"
	"net/http"
	"strings"
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
// RFC 3339 instants, and the whole days of the budget's calendar that
// [from, to) touches are counted (the answer's since and until are those
// days' bounds); or dates YYYY-MM-DD of the budget's calendar, from the
// first day counted and to the last, so from=2026-11-01&to=2026-11-30 is
// November in the budget's zone. The gateway turns dates into instants,
// as it alone knows the zone. A budget the approver may not see is not
// found, as an unknown one is.
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
	if f.Since, f.FromDay, err = instantOrDay(q, "from"); err != nil {
		h.writeError(w, r, err)
		return
	}
	if f.Until, f.ToDay, err = instantOrDay(q, "to"); err != nil {
		h.writeError(w, r, err)
		return
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		h.writeError(w, r, paramError("to", "to must be later than from"))
		return
	}
	sum, err := h.gw.BudgetSpend(r.Context(), approverOf(r), r.PathValue("id"), f)
	if err != nil {
		h.writeError(w, r, renameParameters(err, budgetSpendParameters))
		return
	}
	httpx.WriteJSON(w, http.StatusOK, sum)
}

// instantOrDay reads query parameter name as an RFC 3339 instant or, when
// it is just a date, as a day; both are zero when it is absent.
func instantOrDay(q map[string]string, name string) (time.Time, string, error) {
	s, ok := q[name]
	if !ok {
		return time.Time{}, "", nil
	}
	if len(s) == len(time.DateOnly) {
		day, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return time.Time{}, "", paramError(name, "%s must be a date YYYY-MM-DD, such as 2030-03-15, or an RFC 3339 date and time, such as 2030-03-15T12:00:00Z", name)
		}
		return time.Time{}, s, dateInRange(name, day)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, "", paramError(name, "%s must be a date YYYY-MM-DD, such as 2030-03-15, or an RFC 3339 date and time, such as 2030-03-15T12:00:00Z", name)
	}
	return t, "", dateInRange(name, t)
}

// budgetSpendParameters are the names this route gives the gateway's
// SpendFilter fields, so that a refusal names what the caller sent.
var budgetSpendParameters = map[string]string{"since": "from", "until": "to"}

// renameParameters is err with its Parameter, if one of names, renamed,
// in its message too.
func renameParameters(err error, names map[string]string) error {
	var te *toolgatetype.Error
	if !errors.As(err, &te) {
		return err
	}
	if _, ok := names[te.Parameter]; !ok {
		return err
	}
	pairs := make([]string, 0, 2*len(names))
	for from, to := range names {
		pairs = append(pairs, from, to)
	}
	renamed := *te
	renamed.Parameter = names[te.Parameter]
	renamed.Message = strings.NewReplacer(pairs...).Replace(te.Message)
	return &renamed
}
