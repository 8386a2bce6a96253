package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/tools/goalprovider"
)

// durableStores are the stores a server keeps its state in for real:
// SQLite always, PostgreSQL when the tests are pointed at one.
func durableStores(t *testing.T) map[string]string {
	stores := map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "toolgate.db")}
	if url := os.Getenv("TOOLGATE_TEST_POSTGRES_URL"); url != "" {
		stores["postgres"] = url
	}
	return stores
}

// TestServerTextNoStoreCanKeep: on each durable store, a NUL or another
// C0 control character in what a caller or an approver sends (a resolve
// note, a decision, a query filter, a path's id, an input's string) is
// never a 500: text fields are 400 invalid_request naming the field, and
// an input's string holding U+0000 is refused, naming where it is, or
// kept exactly as sent.
func TestServerTextNoStoreCanKeep(t *testing.T) {
	t.Parallel()
	for name, storage := range durableStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			goal := httptest.NewServer(goalprovider.New())
			t.Cleanup(goal.Close)
			callerKey, approverKey := randomKey(t, "tg_test_text_"), randomKey(t, "tg_test_text_pat_")
			// Ids of their own, so that runs sharing the database never meet.
			principal, budget := randomKey(t, "text-e2e-"), randomKey(t, "text-e2e-budget-")
			path := writeConfig(t, map[string]any{
				"listen":     "127.0.0.1:0",
				"storage":    storage,
				"principals": []any{map[string]any{"id": principal, "apiKeys": []string{callerKey}}},
				"approvers":  []any{map[string]any{"id": "pat", "keys": []string{approverKey}, "principals": []string{principal}}},
				"budgets": []any{map[string]any{"id": budget, "name": "Text team", "members": []string{principal},
					"monthlyLimitUsd": "100.0000", "approvers": []string{"pat"}}},
				"upstreams": map[string]string{"goal-data": goal.URL},
				"trust":     map[string]any{"goal-data": map[string]any{"paymentVerified": true, "endpointVerified": true}},
			})
			srv, base := startServer(t, []string{"-config", path})
			caller := client{t: t, base: base, key: callerKey}
			pat := client{t: t, base: base, key: approverKey}

			refusedNaming := func(r response, field, what string) {
				t.Helper()
				if !assert.Equal(t, http.StatusBadRequest, r.status, "%s naming %s: %s", what, field, r.body) {
					return
				}
				e := r.json(t)["error"].(map[string]any)
				assert.Equal(t, "invalid_request", e["code"], what)
				assert.Contains(t, e["message"], field, what)
			}
			for _, bad := range []string{"a\x00b", "a\x07b", "\x1b[31m"} {
				what := "control " + bad
				refusedNaming(pat.do(http.MethodPost, "/v1/executions/"+uuid.NewString()+"/resolve",
					map[string]any{"outcome": "completed", "note": bad}), "note", what)
				refusedNaming(pat.do(http.MethodPost, "/v1/approval-requests/"+uuid.NewString()+"/approve",
					map[string]any{"remember": "once" + bad}), "remember", what)
				refusedNaming(caller.do(http.MethodGet, "/v1/executions?tool="+urlEscape(bad), nil), "tool", what)
				refusedNaming(pat.do(http.MethodGet, "/v1/receipts?principal="+urlEscape(bad), nil), "principal", what)
				refusedNaming(caller.do(http.MethodGet, "/v1/executions/"+urlEscape(bad), nil), "id", what)
				refusedNaming(caller.do(http.MethodGet, "/v1/approval-requests/"+urlEscape(bad), nil), "id", what)
				refusedNaming(caller.do(http.MethodPut, "/v1/approvals/"+urlEscape(bad), map[string]any{"mode": "never_ask"}), "tool", what)
				refusedNaming(pat.do(http.MethodGet, "/v1/budgets/"+urlEscape(bad)+"/spend", nil), "id", what)
				refusedNaming(caller.do(http.MethodPut, "/v1/spend-controls", map[string]any{
					"tools": map[string]any{bad: map[string]any{"dailyLimitUsd": "1.0000"}}}), "tools has a member whose name holds the control character", what)
				refusedNaming(caller.do(http.MethodPut, "/v1/spend-controls/tools/"+urlEscape(bad), map[string]any{"dailyLimitUsd": "1.0000"}), "tool", what)
			}
			// A date out of 1970-01-01..9999-12-31 is no date the stores are asked about.
			r := pat.do(http.MethodGet, "/v1/budgets/"+budget+"/spend?from=0001-01-01", nil)
			refusedNaming(r, "from", "from=0001-01-01")
			assert.Equal(t, "from", r.json(t)["error"].(map[string]any)["parameter"])
			refusedNaming(caller.do(http.MethodGet, "/v1/spend?since=0001-01-01T00:00:00Z", nil), "since", "since in the year 1")

			// Tab, line feed and carriage return are text.
			r = pat.do(http.MethodPost, "/v1/executions/"+uuid.NewString()+"/resolve", map[string]any{"outcome": "completed", "note": "checked\twith\r\nthe provider"})
			assert.Equal(t, http.StatusNotFound, r.status, "%s", r.body)

			// An input's string holding U+0000: refused naming where, or kept exactly.
			input := map[string]any{"goal": "before\x00after", "step": 2}
			quoteID, digest, _ := caller.quote("goal-data")
			r = caller.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": input})
			assertKeptOrRefused(t, r, http.StatusCreated, "input.goal")
			r = caller.call("goal-data", quoteID, digest, "text-e2e-1", input)
			assertKeptOrRefused(t, r, http.StatusOK, "input.goal")

			assert.Equal(t, 0, srv.stop(exitTimeout))
			for _, line := range srv.logLines() {
				assert.NotEqual(t, "ERROR", line["level"], "%v", line)
			}
		})
	}
}

// assertKeptOrRefused: r is 400 invalid_request naming field, or ok with
// the input as it was sent.
func assertKeptOrRefused(t *testing.T, r response, ok int, field string) {
	t.Helper()
	switch r.status {
	case http.StatusBadRequest:
		e := r.json(t)["error"].(map[string]any)
		assert.Equal(t, "invalid_request", e["code"])
		assert.Contains(t, e["message"], field)
	case ok:
		assert.Contains(t, string(r.body), `before\u0000after`)
	default:
		t.Errorf("status %d: %s", r.status, r.body)
	}
}

func urlEscape(s string) string { return url.QueryEscape(s) }

// TestServerRefusesTokenSubjectsNoStoreCanKeep: on each durable store, a
// token whose subject holds a NUL or another C0 control character, under
// the "*" template that would take any subject as a principal, is 401
// invalid_token naming the claim, on the API and on /mcp, and is never a
// 500.
func TestServerRefusesTokenSubjectsNoStoreCanKeep(t *testing.T) {
	t.Parallel()
	for name, storage := range durableStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addr := ln.Addr().String()
			require.NoError(t, ln.Close())
			base := "http://" + addr
			idp := testidp.Start(t, base+"/mcp")
			subjects := map[string]string{"nul": "agent\x00one", "escape": "\x1b[2Jagent", "bell": "agent\x07"}
			for id, sub := range subjects {
				idp.AddClient(testidp.Client{ID: id, Secret: "secret-" + id, Subject: sub, Scopes: []string{oauth.DefaultCallScope}})
			}
			path := writeConfig(t, map[string]any{
				"listen":     addr,
				"storage":    storage,
				"oauth":      map[string]any{"issuer": idp.Issuer, "audience": base + "/mcp"},
				"principals": []any{map[string]any{"id": "*"}},
			})
			srv, got := startServer(t, []string{"-config", path, "-offline"})
			require.Equal(t, base, got)
			for id := range subjects {
				c := client{t: t, base: base, key: idp.Token(t, id)}
				r := c.do(http.MethodPost, "/v1/tools/earthquake-search/quote", nil)
				require.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", id, r.body)
				assert.Contains(t, r.header.Get("WWW-Authenticate"), `error="invalid_token"`, id)
				assert.Contains(t, r.header.Get("WWW-Authenticate"), "its sub claim holds the control character", id)
				r = c.do(http.MethodPost, "/mcp",
					json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`),
					"Accept", "application/json, text/event-stream")
				assert.Equal(t, http.StatusUnauthorized, r.status, "%s: %s", id, r.body)
			}
			assert.Equal(t, 0, srv.stop(exitTimeout))
			for _, line := range srv.logLines() {
				assert.NotEqual(t, "ERROR", line["level"], "%v", line)
			}
		})
	}
}

// TestServerRefusesConfigTextNoStoreCanKeep: a budget's or an approver's
// name or id holding a NUL or another C0 control character stops the
// server at start with one line naming the field, and exit 2.
func TestServerRefusesConfigTextNoStoreCanKeep(t *testing.T) {
	t.Parallel()
	principals := []any{map[string]any{"id": "alice", "apiKeys": []string{randomKey(t, "tg_test_cfgtext_")}}}
	approver := func(id string) []any {
		return []any{map[string]any{"id": id, "keys": []string{randomKey(t, "tg_test_cfgtext_pat_")}, "principals": []string{"alice"}}}
	}
	budget := func(id, name string) []any {
		return []any{map[string]any{"id": id, "name": name, "members": []string{"alice"}, "dailyLimitUsd": "1.0000"}}
	}
	for _, tt := range []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"budget name", map[string]any{"budgets": budget("team", "Search\x00team")}, `budgets[0].name: holds the control character U+0000`},
		{"budget id", map[string]any{"budgets": budget("team\x1b", "Search team")}, `budgets[0].id: holds the control character U+001B`},
		{"approver id", map[string]any{"approvers": approver("p\x00at")}, `approvers[0].id: holds the control character U+0000`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg["listen"] = "127.0.0.1:0"
			tt.cfg["principals"] = principals
			path := writeConfig(t, tt.cfg)
			srv := startProcess(t, []string{"-config", path, "-offline"})
			assert.Equal(t, 2, srv.wait(exitTimeout))
			assert.Equal(t, "toolgate: "+path+": config: "+tt.want+"\n", srv.stderr.String())
		})
	}
}
