package tooldocs_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
)

// newBudgetDocsServer is a real HTTP server over a gateway with the
// built-in tools and two budgets: the organization's, which pat oversees,
// and its team, which the docs reader is in, with a daily limit one
// goal-data call fills.
func newBudgetDocsServer(t *testing.T) *docsServer {
	t.Helper()
	usd := func(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }
	tg := toolgatetest.New(t, &toolgatetest.Options{Tools: tools.All(), Config: &toolgate.Config{Budgets: []toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", MonthlyLimitUSD: usd("1000"), Approvers: []string{"pat"}},
		{ID: "search", Name: "Search team", Parent: "acme", Members: []string{"docs-reader"}, DailyLimitUSD: usd("0.1500")},
	}}})
	require.NoError(t, tg.Registry.SetTrust("goal-data", registry.Trust{PaymentVerified: registry.Bool(true)}))
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("docs-reader", docsKey))
	require.NoError(t, keys.AddApproverKey("pat", patKey))
	srv := httptest.NewServer(toolgatehttp.NewHandler(tg.Gateway, &toolgatehttp.Options{Authenticator: keys}))
	t.Cleanup(srv.Close)
	return &docsServer{Server: srv, reg: tg.Registry}
}

// TestOpenAPIDescribesBudgets sends the budgets' requests to the gateway,
// and a quote and a refused call that show budgets, and checks each answer
// against the OpenAPI document; and that the document would catch an
// answer of the wrong shape.
func TestOpenAPIDescribesBudgets(t *testing.T) {
	t.Parallel()
	srv := newBudgetDocsServer(t)
	r := srv.get(t, "/v1/registry/tools/goal-data/openapi.json")
	require.Equal(t, http.StatusOK, r.status)
	v := openAPIValidator(t, r.body)
	doc := r.json(t)
	paths := doc["paths"].(map[string]any)
	require.Contains(t, paths, "/v1/budgets")
	require.Contains(t, paths, "/v1/budgets/{id}/spend")
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for _, name := range []string{"Budget", "BudgetWindow", "BudgetList", "BudgetRefusal", "SpendSummary"} {
		assert.Contains(t, schemas, name)
	}

	// check sends req and validates the answer, which must have status.
	check := func(req *http.Request, status int) map[string]any {
		t.Helper()
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, status, resp.StatusCode, "%s %s: %s", req.Method, req.URL, body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		ok, errs := v.ValidateHttpResponse(req, resp)
		requireValid(t, ok, errs, fmt.Sprintf("%s %s answered %d %s", req.Method, req.URL, status, body))
		return docsReply{status: resp.StatusCode, body: body}.json(t)
	}
	newReq := func(method, path, key, body string) *http.Request {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, srv.URL+path, rd)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return req
	}
	quote := func() map[string]any {
		return check(newReq(http.MethodPost, "/v1/tools/goal-data/quote", docsKey, "{}"), http.StatusCreated)
	}
	call := func(q map[string]any, idem string, status int) map[string]any {
		qq := q["quote"].(map[string]any)
		body := fmt.Sprintf(`{"quoteId":%q,"input":{"goal":"g","step":1},"approval":{"manifestDigest":%q}}`, qq["id"], qq["manifestDigest"])
		req := newReq(http.MethodPost, "/v1/tools/goal-data/call", docsKey, body)
		req.Header.Set("Idempotency-Key", idem)
		ok, errs := v.ValidateHttpRequest(req)
		requireValid(t, ok, errs, "the call")
		req = newReq(http.MethodPost, "/v1/tools/goal-data/call", docsKey, body)
		req.Header.Set("Idempotency-Key", idem)
		return check(req, status)
	}

	// A quote shows the budgets; a call under it runs.
	q := quote()
	budgets := q["controls"].(map[string]any)["budgets"].([]any)
	require.Len(t, budgets, 2)
	assert.Equal(t, "search", budgets[0].(map[string]any)["id"])
	assert.Equal(t, "completed", call(q, "budget-docs-1", http.StatusOK)["status"])

	// The next one is refused by the team's budget, named in error.budget.
	q = quote()
	assert.Equal(t, false, q["controls"].(map[string]any)["approved"])
	refused := call(q, "budget-docs-2", http.StatusForbidden)["error"].(map[string]any)
	assert.Equal(t, "spend_limit_exceeded", refused["code"])
	assert.Equal(t, "search", refused["budget"].(map[string]any)["id"])

	// The approver's routes and their refusals.
	list := check(newReq(http.MethodGet, "/v1/budgets", patKey, ""), http.StatusOK)
	assert.Len(t, list["budgets"], 2)
	assert.Equal(t, "UTC", list["budgets"].([]any)[0].(map[string]any)["timeZone"], "a budget naming no zone follows UTC's calendar")
	check(newReq(http.MethodGet, "/v1/budgets", docsKey, ""), http.StatusForbidden)
	check(newReq(http.MethodGet, "/v1/budgets", "", ""), http.StatusUnauthorized)
	for _, c := range []struct {
		query  string
		status int
	}{
		{"?groupBy=day", http.StatusOK},
		{"?groupBy=principal", http.StatusOK},
		{"?groupBy=tool&from=2020-01-01T00:00:00Z", http.StatusOK},
		{"?groupBy=day&from=2020-01-01&to=2020-01-31", http.StatusOK},
		{"?from=2020-02-30", http.StatusBadRequest},
		{"?groupBy=week", http.StatusBadRequest},
		{"?from=yesterday", http.StatusBadRequest},
	} {
		check(newReq(http.MethodGet, "/v1/budgets/search/spend"+c.query, patKey, ""), c.status)
	}
	check(newReq(http.MethodGet, "/v1/budgets/nope/spend", patKey, ""), http.StatusNotFound)
	check(newReq(http.MethodGet, "/v1/budgets/search/spend", docsKey, ""), http.StatusForbidden)

	// Answers that break the documented shapes are caught.
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{http.MethodGet, "/v1/budgets", `{"budgets":[{"id":"acme","name":"Acme","parent":null,"timeZone":"UTC","windows":{"yearly":{}}}]}`, http.StatusOK},
		{http.MethodGet, "/v1/budgets", `{"budgets":[{"id":"acme","name":"Acme","parent":null,"timeZone":"UTC","windows":{"daily":{"limitUsd":"1","usedUsd":"0.0000","remainingUsd":"1.0000","resetsAt":"2030-01-01T00:00:00Z"}}}]}`, http.StatusOK},
		{http.MethodGet, "/v1/budgets", `{"budgets":[{"id":"acme","name":"Acme","parent":null,"windows":{}}]}`, http.StatusOK},
		{http.MethodGet, "/v1/budgets/search/spend", `{"since":"2030-01-01T00:00:00Z","until":"2030-01-02T00:00:00Z","groupBy":"week","totalUsd":"0.0000","groups":[]}`, http.StatusOK},
		{http.MethodPost, "/v1/tools/goal-data/call", `{"error":{"code":"spend_limit_exceeded","message":"m","budget":{"id":"search"}}}`, http.StatusForbidden},
	} {
		req := newReq(c.method, c.path, "", "")
		resp := &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(c.body)), Request: req}
		ok, _ := v.ValidateHttpResponse(req, resp)
		assert.False(t, ok, "%s %s %s must not validate", c.method, c.path, c.body)
	}
}
