package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/sealing"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// asked calls tool and requires an input-required result asking the
// approval question, which it returns with the result's requestState.
func asked(t *testing.T, cs *mcp.ClientSession, tool, args string) (*mcp.ElicitParams, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	require.NoError(t, err)
	require.True(t, res.NeedsInput(), "want a question, got %s", text(res))
	q, ok := res.InputRequests["toolgate/approval"].(*mcp.ElicitParams)
	require.True(t, ok, "%#v", res.InputRequests)
	require.NotEmpty(t, res.RequestState)
	return q, res.RequestState
}

// answer makes the call again with the answer and state.
func answer(cs *mcp.ClientSession, tool, args, state string, a *mcp.ElicitResult) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args),
		RequestState: state, InputResponses: mcp.InputResponseMap{"toolgate/approval": a}})
}

// requireInvalidParams fails t unless a call's answer is the protocol's
// invalid params for a requestState that cannot be used.
func requireInvalidParams(t *testing.T) func(*mcp.CallToolResult, error) {
	return func(res *mcp.CallToolResult, err error) { invalidParams(t, res, err) }
}

func invalidParams(t *testing.T, res *mcp.CallToolResult, err error) {
	t.Helper()
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "want invalid params, got %v (%v)", err, res)
	assert.EqualValues(t, jsonrpc.CodeInvalidParams, rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "requestState cannot be used")
}

var (
	yes     = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	no      = &mcp.ElicitResult{Action: "decline"}
	visited = &mcp.ElicitResult{Action: "accept"}
)

// Under protocol 2026-07-28 the approval form comes in the result; the
// answer, sent with the call and its state, runs the call once, however
// often it is sent. (The tool sends messages: every call asks.)
func TestCallerModeAnswerRunsOnce(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{paidSender()}})
	cs := connect(t, gw, "alice", client{user: approves("once"), manual: true})
	const args = `{"v":"x"}`

	q, state := asked(t, cs, "paid-sender", args)
	assert.Equal(t, "Approve Paid Sender for $0.1100? version "+digestOf(t, gw, "paid-sender"), q.Message)
	gw.Upstream.RequireCalls(t, 0)

	// Declined: nothing runs.
	res, err := answer(cs, "paid-sender", args, state, no)
	require.NoError(t, err)
	requireToolError(t, res, toolgatetype.CodeApprovalRequired)
	gw.Upstream.RequireCalls(t, 0)

	first, err := answer(cs, "paid-sender", args, state, yes)
	require.NoError(t, err)
	assert.JSONEq(t, `{"value":"x"}`, requireCompleted(t, first))
	for _, again := range []*mcp.ElicitResult{yes, no} {
		res, err := answer(cs, "paid-sender", args, state, again)
		require.NoError(t, err)
		assert.Equal(t, executionID(t, first), executionID(t, res), "the first run's result")
	}
	gw.Upstream.RequireCalls(t, 1)
	gw.RequireSpent(t, "alice", "0.1100")

	// An answer without its state, or with a state for other arguments or
	// altered, is invalid params.
	requireInvalidParams(t)(answer(cs, "paid-sender", args, "", yes))
	requireInvalidParams(t)(answer(cs, "paid-sender", `{"v":"y"}`, state, yes))
	altered := []byte(state)
	altered[5] ^= 1
	requireInvalidParams(t)(answer(cs, "paid-sender", args, string(altered), yes))

	// Another server's state (another key) does not open; one sharing the
	// key takes it up.
	fresh := connect(t, gw, "alice", client{user: approves("once"), manual: true})
	_, other := asked(t, fresh, "paid-sender", `{"v":"z"}`)
	requireInvalidParams(t)(answer(cs, "paid-sender", `{"v":"z"}`, other, yes))
	gw.Upstream.RequireCalls(t, 1)

	keys, err := sealing.New(sealing.GenerateKey())
	require.NoError(t, err)
	serve := func() *mcp.ClientSession {
		srv, err := mcpserver.NewServer(gw.Gateway, "alice", &mcpserver.Options{Sealing: keys})
		require.NoError(t, err)
		return connectTo(t, srv, client{user: approves("once"), manual: true})
	}
	one, two := serve(), serve()
	_, shared := asked(t, one, "paid-sender", `{"v":"w"}`)
	res, err = answer(two, "paid-sender", `{"v":"w"}`, shared, yes)
	require.NoError(t, err)
	requireCompleted(t, res)
	gw.Upstream.RequireCalls(t, 2)
}

// Under protocol 2026-07-28 an approver-mode call sends the client to the
// approval page in the result; made again with the state, it runs once an
// approver approved, and once only.
func TestApproverModeAsksInTheResult(t *testing.T) {
	t.Parallel()
	gw := approverGateway(t, nil)
	cs := connectAgent(t, gw, "agent", client{user: approves("once"), url: true})
	const args = `{"v":"x"}`

	page, state := asked(t, cs, "paid-sender", args)
	assert.Equal(t, "url", page.Mode)
	assert.Equal(t, pagesAt+"/approvals/"+page.ElicitationID, page.URL)

	// Back before anyone decides: asked again; the user would not go: a
	// tool error.
	res, err := answer(cs, "paid-sender", args, state, visited)
	require.NoError(t, err)
	require.True(t, res.NeedsInput())
	res, err = answer(cs, "paid-sender", args, state, &mcp.ElicitResult{Action: "cancel"})
	require.NoError(t, err)
	assert.Contains(t, requireToolError(t, res, toolgatetype.CodeApprovalRequired), "did not open the approval page")
	gw.Upstream.RequireCalls(t, 0)

	decide(t, gw, "pat", page.ElicitationID, toolgatetype.Decision{Approve: true})
	first, err := answer(cs, "paid-sender", args, state, visited)
	require.NoError(t, err)
	requireCompleted(t, first)
	again, err := answer(cs, "paid-sender", args, state, visited)
	require.NoError(t, err)
	assert.Equal(t, executionID(t, first), executionID(t, again))
	gw.Upstream.RequireCalls(t, 1)
	assert.Equal(t, toolgatetype.ApprovalStatusUsed, requestOf(t, gw, "agent", page.ElicitationID).Status)

	// A state does not outlive the approval request it sends to.
	latePage, late := asked(t, cs, "paid-sender", `{"v":"late"}`)
	gw.Clock.Advance(requestOf(t, gw, "agent", latePage.ElicitationID).ExpiresAt.Sub(gw.Clock.Now()))
	requireInvalidParams(t)(answer(cs, "paid-sender", `{"v":"late"}`, late, visited))
}

// Before protocol 2026-07-28, a session sent to an approval page is told
// when the request is decided, so that it makes the call again then.
func TestLegacySessionIsToldOfTheDecision(t *testing.T) {
	t.Parallel()
	gw := approverGateway(t, nil)
	srv, err := mcpserver.NewServer(gw.Gateway, "agent", &mcpserver.Options{PublicURL: pagesAt})
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	told := make(chan string, 2)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: approves("once").elicit,
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
		ElicitationCompleteHandler: func(_ context.Context, n *mcp.ElicitationCompleteNotificationRequest) {
			told <- n.Params.ElicitationID
		},
	}).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })

	denied := callSent(t, cs, "paid-sender", `{"v":"no"}`, nil)
	approved := callSent(t, cs, "paid-sender", `{"v":"yes"}`, nil)
	decide(t, gw, "pat", denied.ElicitationID, toolgatetype.Decision{Approve: false})
	decide(t, gw, "pat", approved.ElicitationID, toolgatetype.Decision{Approve: true})
	var got []string
	for range 2 {
		select {
		case id := <-told:
			got = append(got, id)
		case <-time.After(10 * time.Second):
			t.Fatalf("told of %v only", got)
		}
	}
	assert.ElementsMatch(t, []string{denied.ElicitationID, approved.ElicitationID}, got)
	requireCompleted(t, call(t, cs, "paid-sender", `{"v":"yes"}`, nil))
}
