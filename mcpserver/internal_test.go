package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// requestKeyOf is the request key a message carries after keying, "" for none.
func requestKeyOf(t *testing.T, msg []byte) string {
	t.Helper()
	var m struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	require.NoError(t, json.Unmarshal(msg, &m), "%s", msg)
	key, _ := m.Params.Meta[metaRequestKey].(string)
	return key
}

func TestKeyHTTPBodyMarksEveryToolsCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"a call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`, "s1 7"},
		{"a string id", `{"jsonrpc":"2.0","id":"7","method":"tools/call","params":{"name":"echo"}}`, `s1 "7"`},
		{"an escaped method", `{"jsonrpc":"2.0","id":7,"method":"tools\/call","params":{"name":"echo"}}`, "s1 7"},
		{"the client's own key is replaced", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"toolgate/requestKey":"s1 1","keep":1}}}`, "s1 7"},
		{"no id, no key", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","_meta":{"toolgate/requestKey":"s1 1"}}}`, ""},
		{"another method is left alone", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"toolgate/requestKey":"x"}}}`, "x"},
	} {
		out := keyHTTPBody([]byte(tc.body), "s1")
		assert.Equal(t, tc.want, requestKeyOf(t, out), tc.name)
	}

	// The client's other _meta entries stay.
	out := keyHTTPBody([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"keep":1}}}`), "s1")
	assert.Contains(t, string(out), `"keep":1`)

	// A batch: each call its own key.
	batch := keyHTTPBody([]byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}}]`), "s1")
	var msgs []json.RawMessage
	require.NoError(t, json.Unmarshal(batch, &msgs))
	assert.Equal(t, "s1 1", requestKeyOf(t, msgs[0]))
	assert.Equal(t, "s1 2", requestKeyOf(t, msgs[1]))

	// What is not JSON-RPC is the SDK's to refuse, untouched.
	for _, bad := range []string{`{not json`, `[1,`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"nope"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`} {
		assert.Equal(t, bad, string(keyHTTPBody([]byte(bad), "s1")))
	}
}

// A client on protocol 2026-07-28 carries the approval answer and the
// sealed state it was asked with itself: a state it did not get for this
// very call, or altered, is invalid params and nothing runs; what a state
// names is still checked by the gateway.
func TestApprovalAnswersAreChecked(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	g, err := newGateway(gw.Gateway, "alice", nil)
	require.NoError(t, err)
	v, err := gw.Registry.Lookup("echo")
	require.NoError(t, err)
	yes := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	ctx := context.Background()
	// runAnswered makes the call again with the user's yes and state.
	runAnswered := func(args, state string) (*mcp.CallToolResult, error) {
		t.Helper()
		return g.callTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
			Name: "echo", Arguments: json.RawMessage(args),
			InputResponses: mcp.InputResponseMap{approvalInput: yes}, RequestState: state,
		}})
	}
	invalidParams := func(res *mcp.CallToolResult, err error) string {
		t.Helper()
		require.Nil(t, res)
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr)
		assert.EqualValues(t, jsonrpc.CodeInvalidParams, rpcErr.Code)
		return rpcErr.Message
	}
	own := gw.MustQuote(t, "alice", "echo")
	p, err := gw.Prepare("alice", "echo", json.RawMessage(`{"v":"x"}`))
	require.NoError(t, err)
	call := &toolCall{PreparedCall: p, key: "k1"}
	good := newState(call, toolgatetype.ApprovalModeCaller, v.Digest, own.Quote.ID, "", own.Quote.ExpiresAt)
	seal := func(st requestState) string {
		s, err := g.sealState(st)
		require.NoError(t, err)
		return s
	}

	assert.Contains(t, invalidParams(runAnswered(`{"v":"x"}`, "")), "without the requestState")
	assert.Contains(t, invalidParams(runAnswered(`{"v":"x"}`, "not-a-state")), "not issued by this gateway")
	altered := []byte(seal(good))
	altered[len(altered)/2] ^= 1
	assert.Contains(t, invalidParams(runAnswered(`{"v":"x"}`, string(altered))), "not issued by this gateway")
	other, err := newGateway(gw.Gateway, "alice", nil) // another key
	require.NoError(t, err)
	elsewhere, err := other.sealState(good)
	require.NoError(t, err)
	assert.Contains(t, invalidParams(runAnswered(`{"v":"x"}`, elsewhere)), "not issued by this gateway")

	// Another call's state: other arguments, tool or caller.
	assert.Contains(t, invalidParams(runAnswered(`{"v":"y"}`, seal(good))), "issued for another call")
	bobs := good
	bobs.Principal = "bob"
	assert.Contains(t, invalidParams(runAnswered(`{"v":"x"}`, seal(bobs))), "issued for another call")
	renamed := good
	renamed.Tool = "paid-echo"
	assert.Contains(t, invalidParams(runAnswered(`{"v":"x"}`, seal(renamed))), "issued for another call")
	gw.Clock.Advance(own.Quote.ExpiresAt.Sub(gw.Clock.Now()))
	assert.Contains(t, invalidParams(runAnswered(`{"v":"x"}`, seal(good))), "expired at")
	gw.Upstream.RequireCalls(t, 0)

	// What a state names is the gateway's to check: bob's quote is not
	// alice's to use, nor another version's digest an approval of this one.
	textOf := func(res *mcp.CallToolResult, err error) string {
		require.NoError(t, err)
		require.True(t, res.IsError)
		return res.Content[0].(*mcp.TextContent).Text
	}
	bobQuote := gw.MustQuote(t, "bob", "echo")
	forged := newState(call, toolgatetype.ApprovalModeCaller, v.Digest, bobQuote.Quote.ID, "", bobQuote.Quote.ExpiresAt)
	assert.Contains(t, textOf(runAnswered(`{"v":"x"}`, seal(forged))), string(toolgatetype.CodeQuoteNotFound))
	fresh := gw.MustQuote(t, "alice", "echo")
	stale := newState(call, toolgatetype.ApprovalModeCaller, "sha256:"+strings.Repeat("1", 64), fresh.Quote.ID, "", fresh.Quote.ExpiresAt)
	assert.Contains(t, textOf(runAnswered(`{"v":"x"}`, seal(stale))), string(toolgatetype.CodeApprovalMismatch))
	gw.Upstream.RequireCalls(t, 0)
}

// TestHeadOfReadsExactMemberNames: routing reads a body's method and its
// _meta as the SDK does, by exact name, so a "Method" member written after
// "method" cannot make a tools/call look like another request to the
// routing while the SDK runs it as the call.
func TestHeadOfReadsExactMemberNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body      string
		method    string
		versioned bool
	}{
		{`{"method":"tools/call","Method":"subscriptions/listen"}`, "tools/call", false},
		{`{"method":"tools/call","params":{"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "tools/call", false},
		{`{"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "tools/call", true},
		{`[{"method":"tools/call"}]`, "", false},
	} {
		head := headOf([]byte(c.body))
		if head.method != c.method || head.perRequestVersion != c.versioned {
			t.Errorf("headOf(%s) = %+v, want method %q, versioned %v", c.body, head, c.method, c.versioned)
		}
	}
}
