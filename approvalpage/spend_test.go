package approvalpage_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// spendPrincipals are the callers of the Spend page's tests: six, so that
// the month's top five leaves one out.
var spendPrincipals = []string{"ana", "ben", "cy", "dee", "eve", "fay"}

// spendKey is a spend principal's API key.
func spendKey(p string) string { return "tg_test_spend_" + p }

// newSpendAPI serves a gateway with an organization's budget, which pat
// oversees, and a team of every spend principal under it; sam oversees a
// budget of nobody. Its one tool is a priced echo.
func newSpendAPI(t *testing.T) *api {
	t.Helper()
	return newSpendAPIWith(t, []toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", MonthlyLimitUSD: spendUSD("50"), Approvers: []string{"pat"}},
		{ID: "search", Name: "Search <team>", Parent: "acme", Members: spendPrincipals, DailyLimitUSD: spendUSD("1.0000"), WeeklyLimitUSD: spendUSD("10")},
		{ID: "lonely", Name: "Lonely", MonthlyLimitUSD: spendUSD("1"), Approvers: []string{"sam"}},
	})
}

func spendUSD(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }

// newSpendAPIWith serves a gateway with budgets, the spend principals'
// keys and pat's and sam's approver keys, and the priced echo.
func newSpendAPIWith(t *testing.T, budgets []toolgatetype.BudgetDefinition) *api {
	t.Helper()
	cfg := &toolgate.Config{Budgets: budgets}
	paid := toolgatetest.Priced(toolgatetest.EchoTool(), "0.2500")
	paid.Slug, paid.Name = "paid", "Echo paid"
	tg := toolgatetest.New(t, &toolgatetest.Options{Config: cfg, Tools: []*registry.Tool{paid}})
	keys := apikey.NewKeyStore()
	for _, p := range spendPrincipals {
		require.NoError(t, keys.AddKey(p, spendKey(p)))
	}
	require.NoError(t, keys.AddApproverKey("pat", patKey))
	require.NoError(t, keys.AddApproverKey("sam", samKey))
	a := &api{t: t, gw: tg.Gateway, keys: keys, clock: tg.Clock}
	a.srv = httptest.NewServer(toolgatehttp.NewHandler(a.gw, &toolgatehttp.Options{Authenticator: keys}))
	t.Cleanup(a.srv.Close)
	return a
}

// paidCall quotes and calls paid as principal p, and returns what it cost;
// it must run.
func (a *api) paidCall(p string, n int) decimal.Decimal {
	a.t.Helper()
	r := a.do("POST", "/v1/tools/paid/quote", spendKey(p), "{}")
	require.Equal(a.t, http.StatusCreated, r.status, "%s", r.body)
	q := r.json(a.t)["quote"].(map[string]any)
	body := fmt.Sprintf(`{"quoteId":%q,"input":{"v":"%d"}}`, q["id"], n)
	if d, ok := q["manifestDigest"].(string); ok {
		body = fmt.Sprintf(`{"quoteId":%q,"input":{"v":"%d"},"approval":{"manifestDigest":%q}}`, q["id"], n, d)
	}
	r = a.do("POST", "/v1/tools/paid/call", spendKey(p), body, "Idempotency-Key", fmt.Sprintf("spend-%s-%d", p, n))
	require.Equal(a.t, http.StatusOK, r.status, "%s", r.body)
	return decimal.RequireFromString(q["totalUsd"].(string))
}

// spendHistory makes fourteen calls over five days, at most three a day
// (the team's daily limit holds three): ana 4, ben 3, cy, dee and eve 2
// each, fay 1. It ends on the fifth day, eve's two calls, and returns the
// cost of one call.
func (a *api) spendHistory() decimal.Decimal {
	a.t.Helper()
	days := [][]string{
		{"ana", "ana", "ana"},
		{"ana", "ben", "ben"},
		{"ben", "cy", "cy"},
		{"dee", "dee", "fay"},
		{"eve", "eve"},
	}
	var cost decimal.Decimal
	n := 0
	for i, day := range days {
		if i > 0 {
			a.clock.Advance(24 * time.Hour)
		}
		for _, p := range day {
			n++
			cost = a.paidCall(p, n)
		}
	}
	return cost
}

func TestSpendPage(t *testing.T) {
	t.Parallel()
	a := newSpendAPI(t)
	// The history starts on the month's first day, so the month holds it all.
	now := a.clock.Now().UTC()
	a.clock.Advance(time.Date(now.Year(), now.Month()+1, 1, 9, 0, 0, 0, time.UTC).Sub(now))
	cost := a.spendHistory()
	times := func(n int64) string { return cost.Mul(decimal.NewFromInt(n)).StringFixed(4) }

	assert.Contains(t, a.do("GET", "/v1/budgets", patKey, "").json(t)["budgets"].([]any)[0].(map[string]any)["windows"].(map[string]any)["monthly"].(map[string]any)["usedUsd"],
		times(14), "the organization's month holds every call")

	// Before sign-in, nothing of the budgets shows.
	b := testbrowser.New(t)
	page := b.Get(a.srv.URL + "/approvals/spend")
	require.Equal(t, http.StatusOK, page.Status)
	require.True(t, page.HasForm("key"))
	for _, secret := range []string{"Acme", "acme", "ana", "paid"} {
		assert.NotContains(t, page.Text(), secret)
	}

	// Signed in from the list, the Spend link leads to the page.
	page = b.Get(a.srv.URL + "/approvals")
	page = page.Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status, "%s", page.Body)
	spendURL := ""
	for _, link := range page.Elements("a") {
		if textOf(link) == "Spend" {
			spendURL = attrOf(link, "href")
		}
	}
	require.Equal(t, "/approvals/spend", spendURL, "the list links to the Spend page")
	page = b.Get(a.srv.URL + spendURL)
	require.Equal(t, http.StatusOK, page.Status, "%s", page.Body)
	text := page.Text()

	// Each budget the approver oversees, with its windows' use in figures
	// and as bars.
	assert.Contains(t, text, "Acme")
	assert.Contains(t, text, "Search <team>", "the name is shown as text")
	assert.NotContains(t, page.Body, "<team>", "and escaped")
	assert.NotContains(t, text, "Lonely", "sam's budget is not pat's")
	today := cost.Mul(decimal.NewFromInt(2))
	assert.Contains(t, text, fmt.Sprintf("%s USD of 1.0000 USD used (%d%%), %s USD left", times(2),
		today.Mul(decimal.NewFromInt(100)).IntPart(), decimal.NewFromInt(1).Sub(today).StringFixed(4)),
		"today: eve's two calls against the team's daily limit")
	bars := 0
	for _, svg := range page.Elements("svg") {
		if strings.Contains(attrOf(svg, "class"), "bar") {
			bars++
			assert.Equal(t, "img", attrOf(svg, "role"))
			assert.Regexp(t, `^\d+% of the (daily|weekly|monthly) limit used$`, attrOf(svg, "aria-label"))
		}
	}
	assert.Equal(t, 3, bars, "acme's monthly window, the team's daily and weekly")

	// The chart: thirty bars, a title and a description, the figures in text.
	var charts []*html.Node
	for _, svg := range page.Elements("svg") {
		if attrOf(svg, "aria-labelledby") != "" {
			charts = append(charts, svg)
		}
	}
	require.Len(t, charts, 2, "one chart per budget")
	days := 0
	var title, desc string
	walkNodes(charts[1], func(n *html.Node) {
		switch {
		case n.Type == html.ElementNode && n.Data == "rect" && attrOf(n, "class") == "day":
			days++
		case n.Type == html.ElementNode && n.Data == "title" && n.Parent == charts[1]:
			title = textOf(n)
		case n.Type == html.ElementNode && n.Data == "desc":
			desc = textOf(n)
		}
	})
	assert.Equal(t, 30, days)
	assert.Contains(t, title, "Daily spend of Search <team>")
	assert.Contains(t, desc, times(14)+" USD in all")
	assert.Contains(t, desc, times(3)+" USD.", "the highest day: three calls")
	assert.Contains(t, text, a.clock.Now().UTC().Format(time.DateOnly), "today's figures are in text")

	// The month's top five principals (not fay, who spent least) and tools.
	assert.Contains(t, text, "Top principals")
	tops := topsOf(page)
	require.Len(t, tops, 4, "two lists per budget")
	assert.Equal(t, []string{"ana", "ben", "cy", "dee", "eve"}, tops[0], "acme's principals, largest first")
	assert.Equal(t, []string{"paid"}, tops[1])
	assert.Equal(t, tops[0], tops[2], "the team's are the same callers")
	assert.NotContains(t, tops[0], "fay")

	// Sign-out from the Spend page ends the session there too.
	page = page.Form("csrf").Submit("Sign out")
	assert.True(t, page.HasForm("key"))
	assert.NotContains(t, page.Text(), "Acme")

	// sam sees sam's budget only, with nothing charged.
	b = testbrowser.New(t)
	page = b.Get(a.srv.URL+"/approvals/spend").Form("key").Set("key", samKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status)
	assert.Contains(t, page.Text(), "Lonely")
	assert.NotContains(t, page.Text(), "Acme")
	assert.Contains(t, page.Text(), "Nothing was charged in these days.")
}

func TestSpendPageRefusesOtherForms(t *testing.T) {
	t.Parallel()
	a := newSpendAPI(t)
	b := testbrowser.New(t)
	page := b.Get(a.srv.URL+"/approvals/spend").Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status)
	form := page.Form("csrf")
	for _, action := range []string{"decide", "resolve"} {
		got := b.Post(page.URL, "", map[string][]string{"action": {action}, "csrf": {form.Values.Get("csrf")}})
		assert.Equal(t, http.StatusBadRequest, got.Status, action)
	}
	// A caller's key does not sign in.
	page = testbrowser.New(t).Get(a.srv.URL+"/approvals/spend").Form("key").Set("key", spendKey("ana")).Submit("Sign in")
	assert.Equal(t, http.StatusUnauthorized, page.Status)
}

// topsOf is the keys of each ordered list of a page, in order.
func topsOf(p *testbrowser.Page) [][]string {
	var out [][]string
	for _, ol := range p.Elements("ol") {
		var keys []string
		walkNodes(ol, func(n *html.Node) {
			// Each id is isolated (bdi) so that a right-to-left id
			// cannot reorder the amount beside it.
			if n.Type == html.ElementNode && n.Data == "bdi" && n.Parent != nil && n.Parent.Data == "code" {
				keys = append(keys, textOf(n))
			}
		})
		out = append(out, keys)
	}
	return out
}

func walkNodes(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walkNodes(c, fn)
	}
}

func attrOf(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// The chart's thirty days are each budget's own dates. At 10:30 UTC on
// April 1 it is already April 2 on Kiritimati (UTC+14) and still March 31
// on Pago Pago (UTC-11); a call made a day earlier fell on April 1 on the
// one and March 30 on the other, and each chart shows it there.
func TestSpendPageChartsTheBudgetsOwnDates(t *testing.T) {
	t.Parallel()
	a := newSpendAPIWith(t, []toolgatetype.BudgetDefinition{
		{ID: "line", Name: "Line Islands", TimeZone: "Pacific/Kiritimati", Members: []string{"ana"}, MonthlyLimitUSD: spendUSD("50"), Approvers: []string{"pat"}},
		{ID: "samoa", Name: "Samoa", TimeZone: "Pacific/Pago_Pago", Members: []string{"ana"}, MonthlyLimitUSD: spendUSD("50"), Approvers: []string{"pat"}},
	})
	a.clock.Set(time.Date(2030, 3, 31, 10, 30, 0, 0, time.UTC))
	cost := a.paidCall("ana", 1).StringFixed(4)
	a.clock.Set(time.Date(2030, 4, 1, 10, 30, 0, 0, time.UTC))

	b := testbrowser.New(t)
	page := b.Get(a.srv.URL+"/approvals/spend").Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status, "%s", page.Body)
	var titles, descs []string
	for _, svg := range page.Elements("svg") {
		if attrOf(svg, "aria-labelledby") == "" {
			continue
		}
		walkNodes(svg, func(n *html.Node) {
			switch {
			case n.Type == html.ElementNode && n.Data == "title" && n.Parent == svg:
				titles = append(titles, textOf(n))
			case n.Type == html.ElementNode && n.Data == "desc":
				descs = append(descs, textOf(n))
			}
		})
	}
	require.Len(t, titles, 2, "one chart per budget")
	require.Len(t, descs, 2)
	assert.Equal(t, "Daily spend of Line Islands, 2030-03-04 to 2030-04-02", titles[0])
	assert.Equal(t, "One bar a day. "+cost+" USD in all; the highest day, 2030-04-01, "+cost+" USD.", descs[0])
	assert.Equal(t, "Daily spend of Samoa, 2030-03-02 to 2030-03-31", titles[1])
	assert.Equal(t, "One bar a day. "+cost+" USD in all; the highest day, 2030-03-30, "+cost+" USD.", descs[1])
}
