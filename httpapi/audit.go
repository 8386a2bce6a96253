package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/internal/textcheck"
	"github.com/toolgate/toolgate/toolgatetype"
)

// listExecutions serves GET /v1/executions: the caller's executions, or
// with an approver key those of the principals it approves for, newest
// first, a page at a time.
func (h *Handler) listExecutions(w http.ResponseWriter, r *http.Request) {
	q, err := queryOf(r, "tool", "status", "since", "until", "limit", "cursor")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	f := toolgatetype.ExecutionFilter{Tool: q["tool"], Status: toolgatetype.Status(q["status"]), Cursor: q["cursor"]}
	if f.Since, f.Until, err = window(q); err != nil {
		h.writeError(w, r, err)
		return
	}
	if s, ok := q["limit"]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > toolgatetype.MaxListLimit {
			h.writeError(w, r, paramError("limit", "limit must be a whole number from 1 to %d", toolgatetype.MaxListLimit))
			return
		}
		f.Limit = n
	}
	var page *toolgatetype.ExecutionPage
	if approver := approverOf(r); approver != "" {
		page, err = h.gw.ListApproverExecutions(r.Context(), approver, f)
	} else {
		page, err = h.gw.ListExecutions(r.Context(), principalOf(r), f)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, page)
}

// spend serves GET /v1/spend: what the caller (or an approver's principals)
// was charged over a window.
func (h *Handler) spend(w http.ResponseWriter, r *http.Request) {
	q, err := queryOf(r, "since", "until", "groupBy")
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	f := toolgatetype.SpendFilter{GroupBy: toolgatetype.SpendGrouping(q["groupBy"])}
	if f.Since, f.Until, err = window(q); err != nil {
		h.writeError(w, r, err)
		return
	}
	if _, ok := q["groupBy"]; ok && f.GroupBy == "" {
		h.writeError(w, r, paramError("groupBy", "groupBy must be tool or day"))
		return
	}
	var sum *toolgatetype.SpendSummary
	if approver := approverOf(r); approver != "" {
		sum, err = h.gw.ApproverSpend(r.Context(), approver, f)
	} else {
		sum, err = h.gw.Spend(r.Context(), principalOf(r), f)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, sum)
}

// queryOf reads the query parameters a route takes, each at most once.
// Others are ignored; a parameter given twice is refused, since which one
// counts would be a guess.
func queryOf(r *http.Request, names ...string) (map[string]string, error) {
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, httpx.Errorf(toolgatetype.CodeInvalidRequest, "the query string is malformed")
	}
	out := make(map[string]string, len(names))
	for _, name := range names {
		switch vs := values[name]; len(vs) {
		case 0:
		case 1:
			if p := textcheck.Problem(vs[0]); p != "" {
				return nil, paramError(name, "%s %s", name, p)
			}
			out[name] = vs[0]
		default:
			return nil, paramError(name, "%s is given more than once", name)
		}
	}
	return out, nil
}

// window reads since and until, each an RFC 3339 instant or absent (zero).
func window(q map[string]string) (since, until time.Time, err error) {
	if since, err = timeParam(q, "since"); err != nil {
		return
	}
	until, err = timeParam(q, "until")
	return
}

// timeParam reads an RFC 3339 instant; absent is the zero time.
func timeParam(q map[string]string, name string) (time.Time, error) {
	s, ok := q[name]
	if !ok {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, paramError(name, "%s must be an RFC 3339 date and time, such as 2030-03-15T12:00:00Z", name)
	}
	return t, dateInRange(name, t)
}

// The dates a query may name. The gateway reads the zero time (year 1) as
// no date at all, so an earlier bound than 1970 would be silently dropped
// rather than used; nothing toolgate keeps is older anyway.
var (
	earliestDate = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	latestDate   = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// dateInRange refuses an instant, or a day's start, outside 1970-01-01 to
// 9999-12-31 (UTC), naming the parameter.
func dateInRange(name string, t time.Time) error {
	if t.Before(earliestDate) || !t.Before(latestDate) {
		return paramError(name, "%s must be a date from 1970-01-01 to 9999-12-31", name)
	}
	return nil
}

// paramError is invalid_request naming the query parameter at fault.
func paramError(param, format string, args ...any) *toolgatetype.Error {
	e := httpx.Errorf(toolgatetype.CodeInvalidRequest, format, args...)
	e.Parameter = param
	return e
}
