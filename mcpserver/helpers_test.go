package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// legacyProtocol is the newest protocol version in which the server asks the
// client with a request of its own; from 2026-07-28 on it asks through the
// call's result. Approval tests run under both.
const legacyProtocol = "2025-11-25"

// protocols are the two ways a server asks its client something.
var protocols = []struct {
	name    string
	version string // "" for the SDK's newest
}{
	{"input requests", ""},
	{"server request", legacyProtocol},
}

// coveredEcho is the echo tool with its endpoint verified: low risk, so its
// calls need no approval (covered_by_user_policy).
func coveredEcho() *registry.Tool {
	t := toolgatetest.EchoTool()
	t.Endpoint.Verified = true
	return t
}

// paidEcho is a paid echo tool (0.1000 + 0.0100 fee) whose first call of
// each version needs approval: verified endpoint and payment, medium risk.
func paidEcho() *registry.Tool {
	t := toolgatetest.Priced(toolgatetest.EchoTool(), "0.1000")
	t.Slug, t.Name = "paid-echo", "Paid Echo"
	t.Capabilities.OpenWorld = registry.Bool(true)
	return t
}

// paidNote is paidEcho without an output schema.
func paidNote() *registry.Tool {
	t := paidEcho()
	t.Slug, t.Name = "paid-note", "Paid Note"
	t.OutputSchema = nil
	return t
}

// user stands in for the person at the client: it answers every approval
// form as told and remembers the questions.
type user struct {
	mu        sync.Mutex
	answer    *mcp.ElicitResult
	questions []string
}

func approves(remember string) *user {
	content := map[string]any{"approve": true}
	if remember != "" {
		content["remember"] = remember
	}
	return &user{answer: &mcp.ElicitResult{Action: "accept", Content: content}}
}

func answers(action string, content map[string]any) *user {
	return &user{answer: &mcp.ElicitResult{Action: action, Content: content}}
}

func (u *user) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.questions = append(u.questions, req.Params.Message)
	return u.answer, nil
}

func (u *user) asked() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.questions...)
}

// client is how a test connects: the protocol version to ask for ("" for
// the newest), the person at the client (nil: no elicitation), and whether
// the client can also send its user to a URL (URL-mode elicitation).
type client struct {
	version string
	user    *user
	url     bool
	// manual turns the SDK client's own answering of input-required
	// results off: the test sees them, and answers itself.
	manual bool
	// toolsChanged, when set, hears each notifications/tools/list_changed.
	toolsChanged chan<- struct{}
}

// connect serves gw for principal over in-memory transports and returns the
// SDK client's session.
func connect(t *testing.T, gw *toolgatetest.Gateway, principal string, c client) *mcp.ClientSession {
	t.Helper()
	srv, err := mcpserver.NewServer(gw.Gateway, principal, nil)
	require.NoError(t, err)
	return connectTo(t, srv, c)
}

func connectTo(t *testing.T, srv *mcpserver.Server, c client) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	opts := &mcp.ClientOptions{}
	if c.user != nil {
		opts.ElicitationHandler = c.user.elicit
	}
	if c.toolsChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { c.toolsChanged <- struct{}{} }
	}
	if c.manual {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	if c.url {
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts).
		Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: c.version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls tool with args (JSON) and meta, failing t on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, tool, args string, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Meta: meta, Name: tool, Arguments: json.RawMessage(args)})
	require.NoError(t, err)
	return res
}

// text is a result's text content, joined.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// requireCompleted fails t unless res is a completed call's result, and
// returns its structured content as JSON.
func requireCompleted(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.False(t, res.IsError, "the call failed: %s", text(res))
	out, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	return string(out)
}

// requireRefusal fails t unless res is the gateway's refusal with code,
// in the shape every client accepts: a tool error whose one text is the
// HTTP error body as JSON, that body again in _meta["toolgate/error"], and
// no structuredContent (which a client checks against the tool's output
// schema). It returns the body.
func requireRefusal(t *testing.T, res *mcp.CallToolResult, code toolgatetype.Code) toolgatetype.ErrorBody {
	t.Helper()
	require.True(t, res.IsError, "want a tool error, got %s", text(res))
	require.Nil(t, res.StructuredContent, "a refusal has no structured content")
	require.Len(t, res.Content, 1, "one text")
	var body toolgatetype.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(text(res)), &body), "the text is the error body: %s", text(res))
	require.Equal(t, code, body.Error.Code, "%s", text(res))
	meta, err := json.Marshal(res.Meta["toolgate/error"])
	require.NoError(t, err)
	require.JSONEq(t, text(res), string(meta), "_meta[toolgate/error] is the same body")
	return body
}

// requireToolError fails t unless res is a tool error (not a protocol
// error) whose text starts with code, and returns the text: a tool error
// the server words itself (arguments, approval, a failed call).
func requireToolError(t *testing.T, res *mcp.CallToolResult, code toolgatetype.Code) string {
	t.Helper()
	require.True(t, res.IsError, "want a tool error, got %s", text(res))
	require.True(t, strings.HasPrefix(text(res), string(code)+":"), "want %s, got %s", code, text(res))
	return text(res)
}

// executionID is a result's _meta execution id.
func executionID(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	id, ok := res.Meta["toolgate/executionId"].(string)
	require.True(t, ok, "no execution id in %v", res.Meta)
	return id
}

func digestOf(t *testing.T, gw *toolgatetest.Gateway, slug string) string {
	t.Helper()
	v, err := gw.Registry.Lookup(slug)
	require.NoError(t, err)
	return v.Digest
}

func usd(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}

func intp(n int) *int { return &n }

// controls is an operator's spend controls for one principal.
func controls(principal string, c toolgatetype.SpendControls) *toolgate.Config {
	return &toolgate.Config{SpendControls: toolgatetype.StaticSpendControls{principal: c}}
}

// rpcSession is a client that speaks JSON-RPC itself, to send what the
// SDK's client never would: the same request id twice.
type rpcSession struct {
	conn mcp.Connection
}

// rawSession serves gw for principal and opens a session by hand
// (initialize, then initialized) under the legacy protocol.
func rawSession(t *testing.T, gw *toolgatetest.Gateway, principal string) *rpcSession {
	t.Helper()
	srv, err := mcpserver.NewServer(gw.Gateway, principal, nil)
	require.NoError(t, err)
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	conn, err := ct.Connect(ctx)
	require.NoError(t, err)
	s := &rpcSession{conn: conn}
	s.roundTrip(t, 1, "initialize", `{"protocolVersion":"`+legacyProtocol+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	require.NoError(t, conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}))
	return s
}

// roundTrip sends one request and returns its response's result.
func (s *rpcSession) roundTrip(t *testing.T, id int64, method, params string) json.RawMessage {
	t.Helper()
	ctx := context.Background()
	rid, err := jsonrpc.MakeID(float64(id))
	require.NoError(t, err)
	require.NoError(t, s.conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: json.RawMessage(params)}))
	resp := s.response(t)
	require.NoError(t, resp.Error)
	return resp.Result
}

// response reads the next response, past the notifications a server may
// send meanwhile (notifications/tools/list_changed among them), as a
// client does.
func (s *rpcSession) response(t *testing.T) *jsonrpc.Response {
	t.Helper()
	for {
		msg, err := s.conn.Read(context.Background())
		require.NoError(t, err)
		if resp, ok := msg.(*jsonrpc.Response); ok {
			return resp
		}
		req, ok := msg.(*jsonrpc.Request)
		require.True(t, ok && !req.ID.IsValid(), "got %T %v", msg, msg)
	}
}

// failure sends one request and returns the JSON-RPC error it is answered
// with, failing t when it succeeds.
func (s *rpcSession) failure(t *testing.T, id int64, method, params string) *jsonrpc.Error {
	t.Helper()
	ctx := context.Background()
	rid, err := jsonrpc.MakeID(float64(id))
	require.NoError(t, err)
	require.NoError(t, s.conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: json.RawMessage(params)}))
	resp := s.response(t)
	var rpcErr *jsonrpc.Error
	require.ErrorAs(t, resp.Error, &rpcErr, "want an error, got %s", resp.Result)
	return rpcErr
}

// call sends tools/call with request id id.
func (s *rpcSession) call(t *testing.T, id int64, params string) *mcp.CallToolResult {
	t.Helper()
	var res mcp.CallToolResult
	require.NoError(t, json.Unmarshal(s.roundTrip(t, id, "tools/call", params), &res))
	require.False(t, res.IsError, "%s", text(&res))
	return &res
}

// slogTo is a JSON logger writing to w.
func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }
