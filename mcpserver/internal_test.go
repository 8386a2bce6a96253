package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
	for _, bad := range []string{`{not json`, `[1,`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"nope"}`} {
		assert.Equal(t, bad, string(keyHTTPBody([]byte(bad), "s1")))
	}
}

// A client on protocol 2026-07-28 carries the approval answer and the state
// it was asked with itself; what it sends proves nothing the gateway does
// not check.
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
	runAnswered := func(state string) *mcp.CallToolResult {
		t.Helper()
		res, err := g.callTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
			Name: "echo", Arguments: json.RawMessage(`{"v":"x"}`),
			InputResponses: mcp.InputResponseMap{approvalInput: yes}, RequestState: state,
		}})
		require.NoError(t, err)
		return res
	}

	textOf := func(res *mcp.CallToolResult) string {
		require.True(t, res.IsError)
		return res.Content[0].(*mcp.TextContent).Text
	}
	assert.Contains(t, textOf(runAnswered("not-a-state")), "came without the state")

	// bob's quote is not alice's to use.
	bobs := gw.MustQuote(t, "bob", "echo")
	forged := approvalState{QuoteID: bobs.Quote.ID, Digest: v.Digest}.encode()
	assert.Contains(t, textOf(runAnswered(forged)), string(toolgatetype.CodeQuoteNotFound))

	// Nor is another version's digest an approval of this one.
	own := gw.MustQuote(t, "alice", "echo")
	stale := approvalState{QuoteID: own.Quote.ID, Digest: "sha256:" + strings.Repeat("1", 64)}.encode()
	assert.Contains(t, textOf(runAnswered(stale)), string(toolgatetype.CodeApprovalMismatch))
	gw.Upstream.RequireCalls(t, 0)
}
