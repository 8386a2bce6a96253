package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetsPath is where an approver reads the budgets it oversees.
const budgetsPath = "/v1/budgets"

// Budgets returns, for a client holding an approver key, the budgets that
// name its approver and their descendants, as
// toolgate.Gateway.BudgetsFor does: each window that has a limit, with
// what is used in it (charged calls and the amounts calls in flight hold)
// and when it resets. A caller's key is refused with approver_required.
func (c *Client) Budgets(ctx context.Context) ([]toolgatetype.Budget, error) {
	list, err := doJSON[toolgatetype.BudgetList](ctx, c, request{method: http.MethodGet, path: budgetsPath})
	if err != nil {
		return nil, err
	}
	return list.Budgets, nil
}

// BudgetSpend sums, for a client holding an approver key, what budget id's
// calls were charged (its teams' included), grouped by day of the budget's
// calendar, principal or tool, as toolgate.Gateway.BudgetSpend does: the
// whole days of the budget's time zone that [f.Since, f.Until) touches,
// by default from the start of the budget's current window until now
// (its week for a weekly budget, its day for a daily one, else its
// month); or from
// f.FromDay to f.ToDay (the last day included), dates of the budget's
// calendar, which the gateway places in its zone. A budget the
// approver does not oversee is not_found, like one that does not exist; a
// filter the gateway refuses is invalid_request, its Parameter naming the
// query parameter (from, to, groupBy).
func (c *Client) BudgetSpend(ctx context.Context, id string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	if id == "" {
		return nil, &toolgatetype.Error{Code: toolgatetype.CodeInvalidRequest, Message: "a budget id is required"}
	}
	if (f.FromDay != "" && !f.Since.IsZero()) || (f.ToDay != "" && !f.Until.IsZero()) {
		return nil, &toolgatetype.Error{Code: toolgatetype.CodeInvalidRequest, Message: "a bound is given both as an instant and as a day"}
	}
	q := url.Values{}
	if f.GroupBy != "" {
		q.Set("groupBy", string(f.GroupBy))
	}
	setTime(q, "from", f.Since)
	setTime(q, "to", f.Until)
	// A day goes as the date itself: the gateway knows the budget's zone.
	if f.FromDay != "" {
		q.Set("from", f.FromDay)
	}
	if f.ToDay != "" {
		q.Set("to", f.ToDay)
	}
	path := budgetsPath + "/" + url.PathEscape(id) + "/spend"
	return doJSON[toolgatetype.SpendSummary](ctx, c, request{method: http.MethodGet, path: path, query: q})
}
