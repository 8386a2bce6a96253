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
	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A call a team's budget refuses comes back over MCP, in either revision
// the server speaks, as a tool error whose text is the HTTP API's error
// body as JSON, the same body in _meta["toolgate/error"]: the violations
// and error.budget, the budget short, so that a program can tell which
// budget and when it resets. There is no structuredContent, on a tool that
// declares an output schema (which a client would check it against) as on
// one that declares none.
func TestBudgetRefusalNamesTheBudget(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			gw := toolgatetest.New(t, &toolgatetest.Options{
				Tools: []*registry.Tool{paidEcho(), paidNote()},
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
			outputSchemas := map[string]bool{}
			for tool, err := range cs.Tools(context.Background(), nil) {
				require.NoError(t, err)
				outputSchemas[tool.Name] = tool.OutputSchema != nil
			}
			require.Equal(t, map[string]bool{"paid-echo": true, "paid-note": false}, outputSchemas)

			requireCompleted(t, call(t, cs, "paid-echo", `{"v":"a"}`, mcp.Meta{"toolgate/approval": digestOf(t, gw, "paid-echo")}))
			for _, tool := range []string{"paid-echo", "paid-note"} {
				res := call(t, cs, tool, `{"v":"b"}`, mcp.Meta{"toolgate/approval": digestOf(t, gw, tool)})
				body := requireRefusal(t, res, toolgatetype.CodeSpendLimitExceeded)
				assert.Equal(t, "the call would exceed a budget: Call would exceed the Search team budget's daily limit of $0.2000", body.Error.Message)
				assert.Equal(t, []string{"Call would exceed the Search team budget's daily limit of $0.2000"}, body.Error.Violations)
				require.NotNil(t, body.Error.Budget, "%s", text(res))
				assert.Equal(t, "search", body.Error.Budget.ID, "the nearest budget short")
				assert.Equal(t, toolgatetype.BudgetDaily, body.Error.Budget.Window)
				assert.Equal(t, "0.2000", body.Error.Budget.LimitUSD)
				assert.Equal(t, "0.1100", body.Error.Budget.UsedUSD)
				assert.Equal(t, "0.1100", body.Error.Budget.RequestedUSD)
				assert.Equal(t, gw.Clock.Now().UTC().Truncate(24*time.Hour).Add(24*time.Hour), body.Error.Budget.ResetsAt.UTC())
			}

			// The HTTP API answers the same refusal with the same body.
			out := gw.CallTool(context.Background(), "alice", toolgatetype.ToolCallRequest{
				Tool: "paid-echo", Input: json.RawMessage(`{"v":"b"}`), IdempotencyKey: "over-http",
				Approval: &toolgatetype.CallerApproval{ManifestDigest: digestOf(t, gw, "paid-echo")},
			})
			require.NotNil(t, out.Refusal)
			rec := httptest.NewRecorder()
			httpx.WriteError(rec, httptest.NewRequest(http.MethodPost, "/v1/tools/paid-echo/call", nil), nil, out.Refusal)
			assert.Equal(t, http.StatusForbidden, rec.Code)
			assert.JSONEq(t, rec.Body.String(), text(call(t, cs, "paid-echo", `{"v":"c"}`, mcp.Meta{"toolgate/approval": digestOf(t, gw, "paid-echo")})))
			gw.Upstream.RequireCalls(t, 1)
		})
	}
}
