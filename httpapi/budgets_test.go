package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolgatetype"
)

// newBudgetAPI serves a gateway with an organization's budget (acme, pat
// approving), its search team (alice; a daily limit that one goal-data
// call fills) and another team bob is in, which sam oversees alone.
func newBudgetAPI(t *testing.T) *api {
	t.Helper()
	usd := func(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }
	a := newAPI(t, nil, func(c *toolgate.Config) {
		c.Budgets = []toolgatetype.BudgetDefinition{
			{ID: "acme", Name: "Acme", MonthlyLimitUSD: usd("1000"), Approvers: []string{"pat"}},
			{ID: "search", Name: "Search team", Parent: "acme", Members: []string{"alice"}, DailyLimitUSD: usd("0.1500"), WeeklyLimitUSD: usd("5")},
			{ID: "other", Name: "Other team", Members: []string{"bob"}, MonthlyLimitUSD: usd("10"), Approvers: []string{"sam"}},
		}
	})
	require.NoError(t, a.keys.AddApproverKey("pat", patKey))
	require.NoError(t, a.keys.AddApproverKey("sam", samKey))
	return a
}

// goalCall quotes goal-data as key and calls it.
func (a *api) goalCall(key, idem string) (quoted, reply) {
	a.t.Helper()
	q := a.quote(key, "goal-data")
	return q, a.call(key, "goal-data", idem, callBody(q, `{"goal":"g","step":1}`))
}

func TestBudgetsAndRefusalOverHTTP(t *testing.T) {
	t.Parallel()
	a := newBudgetAPI(t)

	// The quote shows the caller's budgets, nearest first.
	r := a.do("POST", "/v1/tools/goal-data/quote", aliceKey, "{}")
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	controls := r.json(t)["controls"].(map[string]any)
	assert.Equal(t, true, controls["approved"])
	budgets := controls["budgets"].([]any)
	require.Len(t, budgets, 2)
	search, acme := budgets[0].(map[string]any), budgets[1].(map[string]any)
	assert.Equal(t, "search", search["id"])
	assert.Equal(t, "acme", search["parent"])
	assert.Equal(t, "acme", acme["id"])
	assert.Nil(t, acme["parent"])
	assert.Equal(t, "0.1500", search["windows"].(map[string]any)["daily"].(map[string]any)["limitUsd"])
	assert.NotContains(t, search["windows"], "monthly", "only the windows that have a limit")

	q, first := a.goalCall(aliceKey, "b1")
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	total := q.Quote.TotalUSD

	// The second call would pass the team's daily limit: the quote says so,
	// and the call is refused naming the budget.
	r = a.do("POST", "/v1/tools/goal-data/quote", aliceKey, "{}")
	controls = r.json(t)["controls"].(map[string]any)
	assert.Equal(t, false, controls["approved"])
	assert.Contains(t, controls["violations"], "Call would exceed the Search team budget's daily limit of $0.1500")
	_, second := a.goalCall(aliceKey, "b2")
	require.Equal(t, http.StatusForbidden, second.status, "%s", second.body)
	assert.Equal(t, "spend_limit_exceeded", second.errorCode(t))
	e := second.json(t)["error"].(map[string]any)
	assert.Contains(t, e["violations"], "Call would exceed the Search team budget's daily limit of $0.1500")
	refusal := e["budget"].(map[string]any)
	assert.Equal(t, "search", refusal["id"])
	assert.Equal(t, "daily", refusal["window"])
	assert.Equal(t, "0.1500", refusal["limitUsd"])
	assert.Equal(t, total, refusal["usedUsd"])
	assert.Equal(t, total, refusal["requestedUsd"])
	resets, err := time.Parse(time.RFC3339, refusal["resetsAt"].(string))
	require.NoError(t, err)
	assert.Equal(t, a.clock.Now().UTC().Truncate(24*time.Hour).Add(24*time.Hour), resets.UTC(), "the team's day is UTC's")
}

func TestListBudgets(t *testing.T) {
	t.Parallel()
	a := newBudgetAPI(t)
	q, r := a.goalCall(aliceKey, "l1")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	r = a.do("GET", "/v1/budgets", patKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var ids []string
	var searchDaily map[string]any
	for _, b := range r.json(t)["budgets"].([]any) {
		b := b.(map[string]any)
		ids = append(ids, b["id"].(string))
		if b["id"] == "search" {
			searchDaily = b["windows"].(map[string]any)["daily"].(map[string]any)
		}
	}
	assert.Equal(t, []string{"acme", "search"}, ids, "the approver's budget and its team, in configuration order; not the other team")
	require.NotNil(t, searchDaily)
	assert.Equal(t, q.Quote.TotalUSD, searchDaily["usedUsd"])
	assert.Equal(t, "0.1500", searchDaily["limitUsd"])
	left := decimal.RequireFromString("0.1500").Sub(decimal.RequireFromString(q.Quote.TotalUSD))
	assert.Equal(t, left.StringFixed(4), searchDaily["remainingUsd"])

	r = a.do("GET", "/v1/budgets", samKey, "")
	require.Equal(t, http.StatusOK, r.status)
	assert.JSONEq(t, `["other"]`, jsonIDs(t, r))

	r = a.do("GET", "/v1/budgets", aliceKey, "")
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.Equal(t, "approver_required", r.errorCode(t))
	r = a.do("GET", "/v1/budgets", "", "")
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Equal(t, "unauthorized", r.errorCode(t))
}

// jsonIDs is the ids of GET /v1/budgets's answer, as a JSON array.
func jsonIDs(t *testing.T, r reply) string {
	t.Helper()
	out := "["
	for i, b := range r.json(t)["budgets"].([]any) {
		if i > 0 {
			out += ","
		}
		out += `"` + b.(map[string]any)["id"].(string) + `"`
	}
	return out + "]"
}

func TestBudgetSpend(t *testing.T) {
	t.Parallel()
	a := newBudgetAPI(t)
	q, r := a.goalCall(aliceKey, "s1")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	_, r = a.goalCall(bobKey, "s2")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	today := a.clock.Now().UTC().Format(time.DateOnly)
	total := q.Quote.TotalUSD

	for _, c := range []struct {
		path, key string
		want      string
	}{
		{"/v1/budgets/search/spend?groupBy=principal", patKey, `[{"key":"alice","totalUsd":"` + total + `","count":1}]`},
		{"/v1/budgets/search/spend?groupBy=day", patKey, `[{"key":"` + today + `","totalUsd":"` + total + `","count":1}]`},
		// The organization's spend holds its team's; bob's is another budget's.
		{"/v1/budgets/acme/spend?groupBy=tool", patKey, `[{"key":"goal-data","totalUsd":"` + total + `","count":1}]`},
		{"/v1/budgets/acme/spend", patKey, `[{"key":"goal-data","totalUsd":"` + total + `","count":1}]`},
		{"/v1/budgets/other/spend?groupBy=principal", samKey, `[{"key":"bob","totalUsd":"` + total + `","count":1}]`},
		// A window of days before the calls counts none of them.
		{"/v1/budgets/search/spend?groupBy=day&from=" + url.QueryEscape(a.clock.Now().AddDate(0, 0, -5).Format(time.RFC3339)) +
			"&to=" + url.QueryEscape(a.clock.Now().AddDate(0, 0, -2).Format(time.RFC3339)), patKey, `[]`},
	} {
		r := a.do("GET", c.path, c.key, "")
		require.Equal(t, http.StatusOK, r.status, "%s: %s", c.path, r.body)
		m := r.json(t)
		assert.JSONEq(t, c.want, mustJSON(t, m["groups"]), c.path)
		if c.want != `[]` {
			assert.Equal(t, total, m["totalUsd"], c.path)
		}
	}

	for _, c := range []struct {
		name, path, key string
		status          int
		code, parameter string
	}{
		{"a caller's key", "/v1/budgets/search/spend", aliceKey, http.StatusForbidden, "approver_required", ""},
		{"no key", "/v1/budgets/search/spend", "", http.StatusUnauthorized, "unauthorized", ""},
		{"an unknown budget", "/v1/budgets/nope/spend", patKey, http.StatusNotFound, "not_found", ""},
		{"another approver's budget", "/v1/budgets/search/spend", samKey, http.StatusNotFound, "not_found", ""},
		{"another approver's budget, the other way", "/v1/budgets/other/spend", patKey, http.StatusNotFound, "not_found", ""},
		{"a grouping it does not know", "/v1/budgets/search/spend?groupBy=week", patKey, http.StatusBadRequest, "invalid_request", "groupBy"},
		{"from not an instant", "/v1/budgets/search/spend?from=yesterday", patKey, http.StatusBadRequest, "invalid_request", "from"},
		{"to not an instant", "/v1/budgets/search/spend?to=2030-13-01", patKey, http.StatusBadRequest, "invalid_request", "to"},
		{"to before from", "/v1/budgets/search/spend?from=2030-03-15T00:00:00Z&to=2030-03-14T00:00:00Z", patKey, http.StatusBadRequest, "invalid_request", "to"},
		{"from twice", "/v1/budgets/search/spend?from=2030-03-15T00:00:00Z&from=2030-03-16T00:00:00Z", patKey, http.StatusBadRequest, "invalid_request", "from"},
		{"to before the month began", "/v1/budgets/search/spend?to=2000-01-01T00:00:00Z", patKey, http.StatusBadRequest, "invalid_request", "to"},
		// The zero time is no date to the gateway: year 1 must not pass for none.
		{"from in the year 1", "/v1/budgets/search/spend?from=0001-01-01", patKey, http.StatusBadRequest, "invalid_request", "from"},
		{"from before 1970", "/v1/budgets/search/spend?from=1969-12-31T23:59:59Z", patKey, http.StatusBadRequest, "invalid_request", "from"},
		{"to in the year 1", "/v1/budgets/search/spend?to=0001-01-01T00:00:00Z", patKey, http.StatusBadRequest, "invalid_request", "to"},
		{"to past 9999", "/v1/budgets/search/spend?to=9999-12-31T23:00:00-05:00", patKey, http.StatusBadRequest, "invalid_request", "to"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := a.do("GET", c.path, c.key, "")
			require.Equal(t, c.status, r.status, "%s", r.body)
			assert.Equal(t, c.code, r.errorCode(t))
			e := r.json(t)["error"].(map[string]any)
			if c.parameter != "" {
				assert.Equal(t, c.parameter, e["parameter"])
				assert.Contains(t, e["message"], c.parameter)
			}
			if c.code == "not_found" {
				assert.NotContains(t, string(r.body), "Search team", "a budget not shown is not described")
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// A budget's days are its zone's: on Kiritimati (UTC+14) a call made at
// noon UTC on March 31 falls on April 1, and asking for the days of
// April by date finds it, where March's days do not; the instants of
// March's UTC bounds touch April 1 there, and so count it.
func TestBudgetSpendByDaysOfTheBudgetsZone(t *testing.T) {
	t.Parallel()
	usd := func(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }
	a := newAPI(t, nil, func(c *toolgate.Config) {
		c.Budgets = []toolgatetype.BudgetDefinition{{ID: "line", Name: "Line Islands", TimeZone: "Pacific/Kiritimati",
			Members: []string{"alice"}, MonthlyLimitUSD: usd("1000"), Approvers: []string{"pat"}}}
	})
	require.NoError(t, a.keys.AddApproverKey("pat", patKey))
	a.clock.Set(time.Date(2030, 3, 31, 12, 0, 0, 0, time.UTC))
	q, r := a.goalCall(aliceKey, "z1")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	total := q.Quote.TotalUSD
	a.clock.Set(time.Date(2030, 4, 10, 0, 0, 0, 0, time.UTC))

	r = a.do("GET", "/v1/budgets", patKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "Pacific/Kiritimati", r.json(t)["budgets"].([]any)[0].(map[string]any)["timeZone"])

	for _, c := range []struct {
		name, query  string
		since, until string
		groups       string
	}{
		{"April by date", "from=2030-04-01&to=2030-04-30", "2030-03-31T10:00:00Z", "2030-04-30T10:00:00Z",
			`[{"key":"2030-04-01","totalUsd":"` + total + `","count":1}]`},
		{"March by date", "from=2030-03-01&to=2030-03-31", "2030-02-28T10:00:00Z", "2030-03-31T10:00:00Z", `[]`},
		{"one day", "from=2030-04-01&to=2030-04-01", "2030-03-31T10:00:00Z", "2030-04-01T10:00:00Z",
			`[{"key":"2030-04-01","totalUsd":"` + total + `","count":1}]`},
		{"March's UTC instants", "from=2030-03-01T00:00:00Z&to=2030-04-01T00:00:00Z", "2030-02-28T10:00:00Z", "2030-04-01T10:00:00Z",
			`[{"key":"2030-04-01","totalUsd":"` + total + `","count":1}]`},
		{"a date and an instant", "from=2030-04-01&to=2030-04-05T00:00:00Z", "2030-03-31T10:00:00Z", "2030-04-05T10:00:00Z",
			`[{"key":"2030-04-01","totalUsd":"` + total + `","count":1}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := a.do("GET", "/v1/budgets/line/spend?groupBy=day&"+c.query, patKey, "")
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			m := r.json(t)
			assert.Equal(t, c.since, m["since"])
			assert.Equal(t, c.until, m["until"])
			assert.JSONEq(t, c.groups, mustJSON(t, m["groups"]))
		})
	}

	for _, c := range []struct{ name, query, parameter string }{
		{"no such day", "from=2030-02-30", "from"},
		{"a date unpadded", "to=2030-4-1", "to"},
		{"a date not one", "to=2030-04-xx", "to"},
		{"to's day before from's", "from=2030-04-02&to=2030-04-01", "to"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := a.do("GET", "/v1/budgets/line/spend?"+c.query, patKey, "")
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			assert.Equal(t, "invalid_request", r.errorCode(t))
			e := r.json(t)["error"].(map[string]any)
			assert.Equal(t, c.parameter, e["parameter"])
			assert.Contains(t, e["message"], c.parameter)
		})
	}
}

// TestBudgetSpendDefaultsToTheWindowOfItsLimit: with no from, a budget's
// spend is counted over the window its limit counts: a weekly budget's
// ISO week in its time zone, a daily one's day; a budget with limits of
// several windows, the month.
func TestBudgetSpendDefaultsToTheWindowOfItsLimit(t *testing.T) {
	t.Parallel()
	usd := func(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }
	a := newAPI(t, nil, func(c *toolgate.Config) {
		c.Budgets = []toolgatetype.BudgetDefinition{
			{ID: "weekly", Name: "Weekly", TimeZone: "Europe/Berlin", Members: []string{"alice"}, WeeklyLimitUSD: usd("100"), Approvers: []string{"pat"}},
			{ID: "daily", Name: "Daily", TimeZone: "Europe/Berlin", Members: []string{"alice"}, DailyLimitUSD: usd("100"), Approvers: []string{"pat"}},
			{ID: "both", Name: "Both", TimeZone: "Europe/Berlin", Members: []string{"alice"}, DailyLimitUSD: usd("100"), WeeklyLimitUSD: usd("100"), Approvers: []string{"pat"}},
			{ID: "tool-weekly", Name: "Tool weekly", Members: []string{"alice"}, Approvers: []string{"pat"},
				Tools: map[string]toolgatetype.BudgetToolLimits{"goal-data": {WeeklyLimitUSD: usd("100")}}},
		}
	})
	require.NoError(t, a.keys.AddApproverKey("pat", patKey))
	// Calls on Sunday 2030-03-03 and Monday 2030-03-04, Berlin time
	// (UTC+1), and on Wednesday 2030-03-06 at 10:00 Berlin, when asked.
	for i, at := range []time.Time{
		time.Date(2030, 3, 3, 12, 0, 0, 0, time.UTC),
		time.Date(2030, 3, 4, 8, 0, 0, 0, time.UTC),
		time.Date(2030, 3, 6, 9, 0, 0, 0, time.UTC),
	} {
		a.clock.Set(at)
		_, r := a.goalCall(aliceKey, "w"+string(rune('0'+i)))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	}

	for _, c := range []struct {
		budget, since string
		count         float64
	}{
		{"weekly", "2030-03-03T23:00:00Z", 2},      // Monday 00:00 Berlin: Monday's and Wednesday's calls
		{"daily", "2030-03-05T23:00:00Z", 1},       // Wednesday 00:00 Berlin
		{"both", "2030-02-28T23:00:00Z", 3},        // the month: March 1, 00:00 Berlin
		{"tool-weekly", "2030-03-04T00:00:00Z", 2}, // a tool's weekly limit: the week, in UTC
	} {
		r := a.do("GET", "/v1/budgets/"+c.budget+"/spend?groupBy=principal", patKey, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		m := r.json(t)
		assert.Equal(t, c.since, m["since"], c.budget)
		groups := m["groups"].([]any)
		require.Len(t, groups, 1, c.budget)
		assert.Equal(t, c.count, groups[0].(map[string]any)["count"], c.budget)
	}
}
