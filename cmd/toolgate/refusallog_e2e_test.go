package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/goalprovider"
)

// TestServerLogsBudgetRefusals: on each durable store, a call a budget
// refuses is logged on the request's line with the principal, the error
// code, the budget and its window, and never the key; and it counts in
// toolgate_budget_refusals_total under that budget and window.
func TestServerLogsBudgetRefusals(t *testing.T) {
	t.Parallel()
	for name, storage := range durableStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			goal := httptest.NewServer(goalprovider.New())
			t.Cleanup(goal.Close)
			key := randomKey(t, "tg_test_refusal_")
			// Ids of their own, so that runs sharing the database never meet.
			principal, budget := randomKey(t, "refusal-e2e-"), randomKey(t, "refusal-e2e-")
			path := writeConfig(t, map[string]any{
				"listen":        "127.0.0.1:0",
				"storage":       storage,
				"metricsListen": "127.0.0.1:0",
				"principals":    []any{map[string]any{"id": principal, "apiKeys": []string{key}}},
				// goal-data costs 0.1100 a call: the second is over the day's limit.
				"budgets":   []any{map[string]any{"id": budget, "members": []string{principal}, "dailyLimitUsd": "0.2000", "monthlyLimitUsd": "100.0000"}},
				"upstreams": map[string]string{"goal-data": goal.URL},
				"trust":     map[string]any{"goal-data": map[string]any{"paymentVerified": true, "endpointVerified": true}},
			})
			srv, base := startServer(t, []string{"-config", path})
			metricsURL := strings.TrimPrefix(srv.waitLine("toolgate metrics on ", 10*time.Second), "toolgate metrics on ")
			c := client{t: t, base: base, key: key}
			input := map[string]any{"goal": "spend the day", "step": 1}
			quoteID, digest, _ := c.quote("goal-data")
			require.Equal(t, http.StatusOK, c.call("goal-data", quoteID, digest, "refusal-1", input).status)
			quoteID, digest, _ = c.quote("goal-data")
			r := c.call("goal-data", quoteID, digest, "refusal-2", input)
			require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
			e := r.json(t)["error"].(map[string]any)
			require.Equal(t, "spend_limit_exceeded", e["code"])
			require.Equal(t, budget, e["budget"].(map[string]any)["id"])

			series := fmt.Sprintf(`toolgate_budget_refusals_total{budget=%q,window="daily"} 1`, budget)
			assert.Contains(t, scrape(t, metricsURL), series)

			require.Equal(t, 0, srv.stop(exitTimeout))
			assert.NotContains(t, srv.stderr.String(), key)
			var refused []map[string]any
			for _, line := range srv.logLines() {
				if line["msg"] == "request" && line["status"] == float64(http.StatusForbidden) {
					refused = append(refused, line)
				}
			}
			require.Len(t, refused, 1, "%s", srv.stderr.String())
			line := refused[0]
			assert.Equal(t, "/v1/tools/goal-data/call", line["path"])
			assert.Equal(t, principal, line["principal"])
			assert.Equal(t, "spend_limit_exceeded", line["code"])
			assert.Equal(t, budget, line["budget"])
			assert.Equal(t, "daily", line["window"])
		})
	}
}

// scrape reads a metrics endpoint's text.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	return readAll(t, resp)
}
