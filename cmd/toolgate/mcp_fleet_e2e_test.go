package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// alternating is a load balancer with no sticky routing: each request to
// /mcp goes to the next backend in turn (and so does each other request,
// counted apart, so that a person approving between two MCP requests does
// not put them on one backend). It records which backend served each
// tools/call, and whether the call carried a requestState.
type alternating struct {
	srv           *httptest.Server
	backends      []*httputil.ReverseProxy
	next, nextAPI atomic.Int64

	mu    sync.Mutex
	calls []routedCall
}

type routedCall struct {
	backend   int
	withState bool
}

func newAlternating(t *testing.T) *alternating {
	t.Helper()
	a := &alternating{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counter := &a.next
		if r.URL.Path != "/mcp" {
			counter = &a.nextAPI
		}
		i := int(counter.Add(1)-1) % len(a.backends)
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				RequestState string `json:"requestState"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
			a.mu.Lock()
			a.calls = append(a.calls, routedCall{backend: i, withState: msg.Params.RequestState != ""})
			a.mu.Unlock()
		}
		a.backends[i].ServeHTTP(w, r)
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// to sends the balancer's requests to these servers, Host and all.
func (a *alternating) to(t *testing.T, bases ...string) {
	t.Helper()
	for _, b := range bases {
		target, err := url.Parse(b)
		require.NoError(t, err)
		a.backends = append(a.backends, &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(target)
				r.Out.Host = r.In.Host
			},
			FlushInterval: -1,
		})
	}
}

// takeCalls returns the tools/call requests routed since the last call.
func (a *alternating) takeCalls() []routedCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.calls
	a.calls = nil
	return out
}

// requireAnsweredElsewhere fails t unless calls are a call that was asked
// for approval and the call made again with its answer and requestState,
// served by different instances.
func requireAnsweredElsewhere(t *testing.T, calls []routedCall) {
	t.Helper()
	require.Len(t, calls, 2, "the call, then the call made again with the answer: %v", calls)
	assert.False(t, calls[0].withState)
	assert.True(t, calls[1].withState)
	assert.NotEqual(t, calls[0].backend, calls[1].backend, "asked by one instance, answered to the other")
}

// executionsOf counts a principal's executions of a tool, over the HTTP API.
func executionsOf(t *testing.T, c client, tool string) int {
	t.Helper()
	r := c.do(http.MethodGet, "/v1/executions?tool="+tool, nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	execs, _ := r.json(t)["executions"].([]any)
	return len(execs)
}

// TestMCPFleetStateless runs two server processes on one PostgreSQL store
// (when TOOLGATE_TEST_POSTGRES_URL names one) behind a balancer that sends
// each request to the other one: a client on protocol 2026-07-28, which
// needs no session, lists the tools, is asked for approval (by the person
// at the client in caller mode; sent to the approval page in approver
// mode), answers, and its call runs once, though the call and its answer
// reach different processes, which seal and open its requestState with the
// key kept in the store. A requestState replayed answers with the first
// run; one altered, or sent with other arguments, is refused.
func TestMCPFleetStateless(t *testing.T) {
	t.Parallel()
	dbURL := os.Getenv("TOOLGATE_TEST_POSTGRES_URL")
	if dbURL == "" {
		t.Skip("TOOLGATE_TEST_POSTGRES_URL is not set")
	}
	callerKey := randomKey(t, "tg_test_fleet_caller_")
	agentKey := randomKey(t, "tg_test_fleet_agent_")
	patKey := randomKey(t, "tg_test_fleet_pat_")
	// Principals of their own, so that runs sharing the database never meet.
	caller, agentID := randomKey(t, "fleet-caller-"), randomKey(t, "fleet-agent-")
	lb := newAlternating(t)
	path := writeConfig(t, map[string]any{
		"listen":  "127.0.0.1:0",
		"storage": dbURL,
		"principals": []any{
			map[string]any{"id": caller, "apiKeys": []string{callerKey}},
			map[string]any{"id": agentID, "apiKeys": []string{agentKey}, "approvalMode": "approver"},
		},
		"approvers": []any{map[string]any{"id": randomKey(t, "fleet-pat-"), "keys": []string{patKey}, "principals": []string{agentID}}},
		"approvals": map[string]any{"publicUrl": lb.srv.URL},
		// No sealingKeys: the instances seal with the key kept in the
		// store they share.
	})
	var bases []string
	for range 2 {
		srv, base := startServer(t, []string{"-config", path, "-offline"})
		t.Cleanup(func() { srv.stop(exitTimeout) })
		bases = append(bases, base)
	}
	lb.to(t, bases...)
	ctx := context.Background()
	connect := func(key string, opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		transport := &mcp.StreamableClientTransport{Endpoint: lb.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: withKey{key}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "fleet-e2e", Version: "1"}, opts).Connect(ctx, transport, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
		assert.Empty(t, cs.ID(), "no session")
		return cs
	}

	t.Run("caller mode", func(t *testing.T) {
		person := &agent{}
		cs := connect(callerKey, &mcp.ClientOptions{ElicitationHandler: person.elicit})
		tools := mcpTools(t, cs)
		digest, _ := tools["earthquake-search"].Meta["toolgate/manifestDigest"].(string)
		require.NotEmpty(t, digest)
		lb.takeCalls()

		// The SDK's client asks its person and makes the call again.
		res := mcpCall(t, cs, "earthquake-search", quakes, nil)
		assert.Len(t, completed(t, res)["features"], 10)
		assert.Equal(t, []string{"Approve Earthquake Search for $0.0000? version " + digest}, person.asked())
		requireAnsweredElsewhere(t, lb.takeCalls())
		api := client{t: t, base: lb.srv.URL, key: callerKey}
		assert.Equal(t, 1, executionsOf(t, api, "earthquake-search"), "run once")

		// By hand: the same state and answer sent again answer with the
		// first run, on the other instance; the tool runs once.
		manual := connect(callerKey, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}})
		args := map[string]any{"starttime": "2024-09-26"}
		asked, err := manual.CallTool(ctx, &mcp.CallToolParams{Name: "earthquake-search", Arguments: args})
		require.NoError(t, err)
		require.True(t, asked.NeedsInput())
		form, ok := asked.InputRequests["toolgate/approval"].(*mcp.ElicitParams)
		require.True(t, ok)
		assert.Equal(t, "Approve Earthquake Search for $0.0000? version "+digest, form.Message)
		answer := func(state string, args any) (*mcp.CallToolResult, error) {
			return manual.CallTool(ctx, &mcp.CallToolParams{Name: "earthquake-search", Arguments: args, RequestState: state,
				InputResponses: mcp.InputResponseMap{"toolgate/approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}})
		}
		first, err := answer(asked.RequestState, args)
		require.NoError(t, err)
		completed(t, first)
		again, err := answer(asked.RequestState, args)
		require.NoError(t, err)
		assert.Equal(t, first.Meta["toolgate/executionId"], again.Meta["toolgate/executionId"], "the first run's result")
		calls := lb.takeCalls()
		require.Len(t, calls, 3)
		assert.NotEqual(t, calls[1].backend, calls[2].backend, "replayed on the other instance")
		assert.Equal(t, 2, executionsOf(t, api, "earthquake-search"), "the answer sent twice ran once")

		// Altered, or for other arguments: invalid params, nothing runs.
		altered := []byte(asked.RequestState)
		altered[len(altered)/2] ^= 'A' ^ 'B'
		for name, tc := range map[string]struct {
			state string
			args  any
		}{
			"altered":         {string(altered), args},
			"other arguments": {asked.RequestState, map[string]any{"starttime": "2024-09-27"}},
		} {
			_, err := answer(tc.state, tc.args)
			var rpcErr *jsonrpc.Error
			require.True(t, errors.As(err, &rpcErr), "%s: want a JSON-RPC error, got %v", name, err)
			assert.EqualValues(t, jsonrpc.CodeInvalidParams, rpcErr.Code, name)
			assert.Contains(t, rpcErr.Message, "requestState cannot be used", name)
		}
		assert.Equal(t, 2, executionsOf(t, api, "earthquake-search"))
	})

	t.Run("approver mode", func(t *testing.T) {
		pat := client{t: t, base: lb.srv.URL, key: patKey}
		var mu sync.Mutex
		var sentTo []*mcp.ElicitParams
		// The person at the client opens the page, and an approver
		// approves there (the HTTP API stands for the page); a form must
		// never be shown.
		elicit := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			sentTo = append(sentTo, req.Params)
			mu.Unlock()
			if req.Params.Mode != "url" {
				return nil, errors.New("a form was shown in approver mode")
			}
			r, err := pat.send(http.MethodPost, "/v1/approval-requests/"+req.Params.ElicitationID+"/approve", nil)
			if err != nil || r.status != http.StatusOK {
				return nil, errors.New("the approval failed: " + string(r.body))
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		}
		cs := connect(agentKey, &mcp.ClientOptions{ElicitationHandler: elicit,
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
				Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
			}}})
		assert.Contains(t, mcpTools(t, cs), "earthquake-search")
		lb.takeCalls()

		res := mcpCall(t, cs, "earthquake-search", quakes, nil)
		assert.Len(t, completed(t, res)["features"], 10)
		requireAnsweredElsewhere(t, lb.takeCalls())
		require.Len(t, sentTo, 1)
		id := sentTo[0].ElicitationID
		assert.Equal(t, lb.srv.URL+"/approvals/"+id, sentTo[0].URL)
		r := client{t: t, base: lb.srv.URL, key: agentKey}.do(http.MethodGet, "/v1/approval-requests/"+id, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.Equal(t, "used", r.json(t)["status"])
		assert.Equal(t, res.Meta["toolgate/executionId"], r.json(t)["executionId"])
		assert.Equal(t, 1, executionsOf(t, client{t: t, base: lb.srv.URL, key: agentKey}, "earthquake-search"), "run once")
	})
}
