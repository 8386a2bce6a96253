package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A call a team's budget refuses comes back over MCP, in either revision
// the server speaks, as a tool error whose structured content is the HTTP
// API's error body: the violations and error.budget, the budget short, so
// that a program can tell which budget and when it resets.
func TestBudgetRefusalNamesTheBudget(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			gw := toolgatetest.New(t, &toolgatetest.Options{
				Tools: []*registry.Tool{paidEcho()},
				Config: &toolgate.Config{Budgets: []toolgatetype.BudgetDefinition{
					{ID: "acme", Name: "Acme", MonthlyLimitUSD: usd("1000")},
					{ID: "search", Name: "Search team", Parent: "acme", Members: []string{"alice"}, DailyLimitUSD: usd("0.2000")},
				}},
			})
			keys := apikey.NewKeyStore()
			require.NoError(t, keys.AddKey("alice", aliceKey))
			h, err := mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{Authenticator: keys})
			require.NoError(t, err)
			srv := httptest.NewServer(h)
			t.Cleanup(func() {
				h.Close()
				srv.Close()
			})
			transport := &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{aliceKey, http.DefaultTransport}}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "budget-agent", Version: "1"}, nil).
				Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: p.version})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			if p.version != "" {
				require.Equal(t, p.version, cs.InitializeResult().ProtocolVersion)
			}
			approved := mcp.Meta{"toolgate/approval": digestOf(t, gw, "paid-echo")}

			requireCompleted(t, call(t, cs, "paid-echo", `{"v":"a"}`, approved))
			res := call(t, cs, "paid-echo", `{"v":"b"}`, approved)
			msg := requireToolError(t, res, toolgatetype.CodeSpendLimitExceeded)
			assert.Contains(t, msg, "Call would exceed the Search team budget's daily limit of $0.2000")
			require.NotNil(t, res.StructuredContent, "the refusal carries the error's fields")
			raw, err := json.Marshal(res.StructuredContent)
			require.NoError(t, err)
			var body toolgatetype.ErrorBody
			require.NoError(t, json.Unmarshal(raw, &body), "%s", raw)
			assert.Equal(t, toolgatetype.CodeSpendLimitExceeded, body.Error.Code)
			assert.Contains(t, body.Error.Violations, "Call would exceed the Search team budget's daily limit of $0.2000")
			require.NotNil(t, body.Error.Budget, "%s", raw)
			assert.Equal(t, "search", body.Error.Budget.ID, "the nearest budget short")
			assert.Equal(t, toolgatetype.BudgetDaily, body.Error.Budget.Window)
			assert.Equal(t, "0.2000", body.Error.Budget.LimitUSD)
			assert.Equal(t, "0.1100", body.Error.Budget.UsedUSD)
			assert.Equal(t, "0.1100", body.Error.Budget.RequestedUSD)
			assert.Equal(t, gw.Clock.Now().UTC().Truncate(24*time.Hour).Add(24*time.Hour), body.Error.Budget.ResetsAt.UTC())
			gw.Upstream.RequireCalls(t, 1)
		})
	}
}
