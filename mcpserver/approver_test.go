package mcpserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// pagesAt is where the approval pages of the in-memory tests are.
const pagesAt = "https://gateway.example/toolgate"

// The people of the approver-mode tests: pat approves agent's calls, sam
// other's; alice approves her own.
var approvers = toolgatetype.StaticApprovers{
	Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover, "other": toolgatetype.ApprovalModeApprover},
	Approvers: map[string][]string{"pat": {"agent"}, "sam": {"other"}},
}

// paidSender is the paid echo tool saying it sends messages: high risk,
// so every call of it needs approval (per_call).
func paidSender() *registry.Tool {
	t := paidEcho()
	t.Slug, t.Name = "paid-sender", "Paid Sender"
	t.Capabilities.SendsMessages = registry.Bool(true)
	return t
}

// approverGateway is a gateway with the paid sender tool and the people
// above, over store (nil: a new memory store).
func approverGateway(t *testing.T, store storage.Store) *toolgatetest.Gateway {
	t.Helper()
	return toolgatetest.New(t, &toolgatetest.Options{
		Store: store,
		Tools: []*registry.Tool{paidSender()},
		// A quote's life is what an approval lasts; long enough here for
		// the clock never to be the reason a test fails.
		Config: &toolgate.Config{Approvers: approvers, QuoteTTL: 10 * time.Minute},
	})
}

// connectAgent serves gw for principal, with its approval pages at pagesAt,
// and connects c to it. The test answers input-required results itself.
func connectAgent(t *testing.T, gw *toolgatetest.Gateway, principal string, c client) *mcp.ClientSession {
	t.Helper()
	srv, err := mcpserver.NewServer(gw.Gateway, principal, &mcpserver.Options{PublicURL: pagesAt + "/"})
	require.NoError(t, err)
	c.manual = true
	return connectTo(t, srv, c)
}

// sentToApprover fails t unless the client was sent to one approval page,
// and returns the URL elicitation: an input-required result under protocol
// 2026-07-28, the URL-elicitation-required error before it.
func sentToApprover(t *testing.T, res *mcp.CallToolResult, err error) *mcp.ElicitParams {
	t.Helper()
	if err == nil {
		require.True(t, res.NeedsInput(), "want the client sent to an approver, got %s", text(res))
		require.Len(t, res.InputRequests, 1)
		require.NotEmpty(t, res.RequestState)
		e, ok := res.InputRequests["toolgate/approval"].(*mcp.ElicitParams)
		require.True(t, ok, "%#v", res.InputRequests)
		assert.Equal(t, "url", e.Mode)
		assert.Nil(t, e.RequestedSchema)
		return e
	}
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "want the URL-elicitation-required error, got %v", err)
	require.EqualValues(t, mcp.CodeURLElicitationRequired, rpcErr.Code, rpcErr.Message)
	var data struct {
		Elicitations []*mcp.ElicitParams `json:"elicitations"`
	}
	require.NoError(t, json.Unmarshal(rpcErr.Data, &data))
	require.Len(t, data.Elicitations, 1)
	e := data.Elicitations[0]
	assert.Equal(t, "url", e.Mode)
	assert.Nil(t, e.RequestedSchema)
	return e
}

// callSent calls tool and requires that the client is sent to an approver.
func callSent(t *testing.T, cs *mcp.ClientSession, tool, args string, meta mcp.Meta) *mcp.ElicitParams {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Meta: meta, Name: tool, Arguments: json.RawMessage(args)})
	return sentToApprover(t, res, err)
}

// decide has approver decide request id.
func decide(t *testing.T, gw *toolgatetest.Gateway, approver, id string, d toolgatetype.Decision) {
	t.Helper()
	_, err := gw.DecideApproval(context.Background(), approver, id, d)
	require.NoError(t, err)
}

// requestOf reads principal's approval request id.
func requestOf(t *testing.T, gw *toolgatetest.Gateway, principal, id string) *toolgatetype.ApprovalRequest {
	t.Helper()
	r, err := gw.ApprovalRequest(context.Background(), principal, id)
	require.NoError(t, err)
	return r
}

// requestsFor lists every approval request an approver sees.
func requestsFor(t *testing.T, gw *toolgatetest.Gateway, approver string) []toolgatetype.ApprovalRequest {
	t.Helper()
	list, err := gw.ListApprovalRequests(context.Background(), approver, toolgatetype.ApprovalListOptions{Status: toolgatetype.ApprovalStatusAll})
	require.NoError(t, err)
	return list.ApprovalRequests
}

func TestApproverModeSendsTheClientToTheApprovalPage(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			gw := approverGateway(t, nil)
			digest := digestOf(t, gw, "paid-sender")
			person := approves("once") // would approve any form; none may count
			cs := connectAgent(t, gw, "agent", client{version: p.version, user: person, url: true})

			// The call asks an approver: the client is sent to the page.
			e := callSent(t, cs, "paid-sender", `{"v":"x","n":2}`, nil)
			r := requestOf(t, gw, "agent", e.ElicitationID)
			assert.Equal(t, pagesAt+"/approvals/"+r.ID, e.URL)
			assert.Contains(t, e.Message, "Approve Paid Sender for $0.1100? version "+digest)
			assert.Equal(t, toolgatetype.ApprovalStatusPending, r.Status)
			assert.JSONEq(t, `{"v":"x","n":2}`, string(r.Input))
			assert.Equal(t, "0.1100", r.TotalUSD)

			// Called again before anyone decides: the same request, not a second.
			again := callSent(t, cs, "paid-sender", `{"n":2, "v":"x"}`, nil)
			assert.Equal(t, e.ElicitationID, again.ElicitationID)
			assert.Equal(t, e.URL, again.URL)
			assert.Len(t, requestsFor(t, gw, "pat"), 1)
			gw.Upstream.RequireCalls(t, 0)
			gw.RequireSpent(t, "agent", "0.0000")

			// pat approves; the retry runs with the grant, under the
			// request's quote, with an idempotency key of the agent's.
			decide(t, gw, "pat", r.ID, toolgatetype.Decision{Approve: true})
			meta := mcp.Meta{"toolgate/idempotencyKey": "order-1"}
			res := call(t, cs, "paid-sender", `{"v":"x","n":2}`, meta)
			assert.JSONEq(t, `{"value":"x"}`, requireCompleted(t, res))
			used := requestOf(t, gw, "agent", r.ID)
			assert.Equal(t, toolgatetype.ApprovalStatusUsed, used.Status)
			assert.Equal(t, executionID(t, res), used.ExecutionID)
			gw.Upstream.RequireCalls(t, 1)
			gw.RequireSpent(t, "agent", "0.1100")

			// Re-sent under its key: the same answer, not a second run.
			replayed := call(t, cs, "paid-sender", `{"v":"x","n":2}`, meta)
			assert.Equal(t, executionID(t, res), executionID(t, replayed))
			gw.Upstream.RequireCalls(t, 1)

			// The grant served that call: the same call made anew asks again.
			next := callSent(t, cs, "paid-sender", `{"v":"x","n":2}`, nil)
			assert.NotEqual(t, r.ID, next.ElicitationID)
			assert.Equal(t, toolgatetype.ApprovalStatusPending, requestOf(t, gw, "agent", next.ElicitationID).Status)
			gw.Upstream.RequireCalls(t, 1)
			assert.Empty(t, person.asked(), "no form is shown in approver mode")
		})
	}
}

func TestApproverModeDeniedCallIsAToolError(t *testing.T) {
	t.Parallel()
	gw := approverGateway(t, nil)
	cs := connectAgent(t, gw, "agent", client{user: approves("once"), url: true})
	e := callSent(t, cs, "paid-sender", `{"v":"x"}`, nil)
	decide(t, gw, "pat", e.ElicitationID, toolgatetype.Decision{Approve: false})

	res := call(t, cs, "paid-sender", `{"v":"x"}`, nil)
	msg := requireToolError(t, res, toolgatetype.CodeApprovalDenied)
	assert.Contains(t, msg, "approval request "+e.ElicitationID)
	assert.Contains(t, msg, "Nothing was run or charged.")
	requireToolError(t, call(t, cs, "paid-sender", `{"v":"x"}`, nil), toolgatetype.CodeApprovalDenied)
	assert.Len(t, requestsFor(t, gw, "pat"), 1, "a denied call does not ask again at once")
	gw.Upstream.RequireCalls(t, 0)
	gw.RequireSpent(t, "agent", "0.0000")

	// Once the denied request would have expired, the same call asks again.
	gw.Clock.Advance(toolgate.DefaultApprovalTTL)
	next := callSent(t, cs, "paid-sender", `{"v":"x"}`, nil)
	assert.NotEqual(t, e.ElicitationID, next.ElicitationID)
	gw.Upstream.RequireCalls(t, 0)
}

func TestApproverModeWithoutURLElicitationGivesTheURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		client client
	}{
		{"no elicitation", client{}},
		{"form elicitation only", client{user: approves("never_ask")}},
		{"form elicitation only, older protocol", client{version: legacyProtocol, user: approves("never_ask")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			gw := approverGateway(t, nil)
			cs := connectAgent(t, gw, "agent", c.client)

			res := call(t, cs, "paid-sender", `{"v":"x"}`, nil)
			msg := requireToolError(t, res, toolgatetype.CodeApprovalRequired)
			pending := requestsFor(t, gw, "pat")
			require.Len(t, pending, 1)
			id := pending[0].ID
			assert.Contains(t, msg, "An approver decides at "+pagesAt+"/approvals/"+id)
			assert.Contains(t, msg, "call paid-sender again with the same arguments")
			assert.Contains(t, msg, "Nothing was run or charged.")
			if c.client.user != nil {
				assert.Empty(t, c.client.user.asked(), "a form answer is not an approver's approval")
			}

			// Asked again: the same request and URL.
			assert.Equal(t, msg, text(call(t, cs, "paid-sender", `{"v":"x"}`, nil)))
			gw.Upstream.RequireCalls(t, 0)

			decide(t, gw, "pat", id, toolgatetype.Decision{Approve: true})
			requireCompleted(t, call(t, cs, "paid-sender", `{"v":"x"}`, nil))
			gw.Upstream.RequireCalls(t, 1)
			gw.RequireSpent(t, "agent", "0.1100")
		})
	}
}

// What a caller-mode client offers as approval approves nothing for a
// principal in approver mode: the digest in _meta, a form its user
// answers, or an answer to a form it was never sent.
func TestApproverModeIgnoresTheCallersOwnApproval(t *testing.T) {
	t.Parallel()
	gw := approverGateway(t, nil)
	digest := digestOf(t, gw, "paid-sender")
	person := approves("never_ask")
	for _, p := range protocols {
		cs := connectAgent(t, gw, "agent", client{version: p.version, user: person, url: true})
		callSent(t, cs, "paid-sender", `{"v":"x"}`, mcp.Meta{"toolgate/approval": digest})

		form := connectAgent(t, gw, "agent", client{version: p.version, user: person})
		requireToolError(t, call(t, form, "paid-sender", `{"v":"y"}`, mcp.Meta{"toolgate/approval": digest}), toolgatetype.CodeApprovalRequired)
	}
	assert.Empty(t, person.asked())

	// A client that answers the caller-mode form unasked, with a state of
	// its own making that names its own quote and the right digest: no
	// state the server did not seal opens.
	q := gw.MustQuote(t, "agent", "paid-sender")
	state, err := json.Marshal(map[string]string{"quoteId": q.Quote.ID, "digest": digest})
	require.NoError(t, err)
	raw := rawSession(t, gw, "agent")
	params, err := json.Marshal(map[string]any{
		"name": "paid-sender", "arguments": map[string]string{"v": "z"},
		"inputResponses": map[string]any{"toolgate/approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}},
		"requestState":   base64.RawURLEncoding.EncodeToString(state),
	})
	require.NoError(t, err)
	rpcErr := raw.failure(t, 2, "tools/call", string(params))
	assert.EqualValues(t, jsonrpc.CodeInvalidParams, rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "requestState cannot be used")

	gw.Upstream.RequireCalls(t, 0)
	gw.RequireSpent(t, "agent", "0.0000")
	approvals, err := gw.Approvals(context.Background(), "agent")
	require.NoError(t, err)
	assert.Empty(t, approvals, "no standing approval was remembered")
}

// A grant approves one principal's call with one input: another principal
// making the same call, or the same principal with other arguments, is
// asked anew, and the grant stays for the call it was given for.
func TestApproverModeGrantIsBoundToThePrincipalAndInput(t *testing.T) {
	t.Parallel()
	gw := approverGateway(t, nil)
	agent := connectAgent(t, gw, "agent", client{user: approves("once"), url: true})
	e := callSent(t, agent, "paid-sender", `{"v":"x"}`, nil)
	decide(t, gw, "pat", e.ElicitationID, toolgatetype.Decision{Approve: true})

	other := connectAgent(t, gw, "other", client{user: approves("once"), url: true})
	theirs := callSent(t, other, "paid-sender", `{"v":"x"}`, nil)
	assert.NotEqual(t, e.ElicitationID, theirs.ElicitationID)
	assert.Equal(t, "other", requestOf(t, gw, "other", theirs.ElicitationID).Principal)
	_, err := gw.ApprovalRequest(context.Background(), "other", e.ElicitationID)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequestNotFound)

	changed := callSent(t, agent, "paid-sender", `{"v":"y"}`, nil)
	assert.NotEqual(t, e.ElicitationID, changed.ElicitationID)
	gw.Upstream.RequireCalls(t, 0)
	assert.Equal(t, toolgatetype.ApprovalStatusApproved, requestOf(t, gw, "agent", e.ElicitationID).Status)

	requireCompleted(t, call(t, agent, "paid-sender", `{"v":"x"}`, nil))
	gw.Upstream.RequireCalls(t, 1)
	gw.RequireSpent(t, "other", "0.0000")
}

func TestApproverModeApprovalThatExpiredUnusedIsAskedAgain(t *testing.T) {
	t.Parallel()
	gw := approverGateway(t, nil)
	cs := connectAgent(t, gw, "agent", client{user: approves("once"), url: true})
	e := callSent(t, cs, "paid-sender", `{"v":"x"}`, nil)
	decide(t, gw, "pat", e.ElicitationID, toolgatetype.Decision{Approve: true})
	expiry := requestOf(t, gw, "agent", e.ElicitationID).ExpiresAt

	gw.Clock.Set(expiry)
	next := callSent(t, cs, "paid-sender", `{"v":"x"}`, nil)
	assert.NotEqual(t, e.ElicitationID, next.ElicitationID)
	assert.Contains(t, next.Message, "The approval of request "+e.ElicitationID+" expired unused at "+expiry.Format(time.RFC3339))
	assert.Equal(t, toolgatetype.ApprovalStatusExpired, requestOf(t, gw, "agent", e.ElicitationID).Status)
	gw.Upstream.RequireCalls(t, 0)

	// The new request, approved, runs.
	decide(t, gw, "pat", next.ElicitationID, toolgatetype.Decision{Approve: true})
	requireCompleted(t, call(t, cs, "paid-sender", `{"v":"x"}`, nil))
	gw.Upstream.RequireCalls(t, 1)
}

// An approver who remembers the approval covers the tool's version for
// the principal: its calls then run without asking.
func TestApproverModeRememberedApprovalCoversLaterCalls(t *testing.T) {
	t.Parallel()
	gw := approverGateway(t, nil)
	cs := connectAgent(t, gw, "agent", client{user: approves("once"), url: true})
	e := callSent(t, cs, "paid-sender", `{"v":"x"}`, nil)
	decide(t, gw, "pat", e.ElicitationID, toolgatetype.Decision{Approve: true, Remember: toolgatetype.ApprovalNeverAsk})
	requireCompleted(t, call(t, cs, "paid-sender", `{"v":"x"}`, nil))
	requireCompleted(t, call(t, cs, "paid-sender", `{"v":"other"}`, nil))
	gw.Upstream.RequireCalls(t, 2)
	assert.Len(t, requestsFor(t, gw, "pat"), 1)
}

func TestApproverModeWithoutAPageAddressSaysSo(t *testing.T) {
	t.Parallel()
	gw := approverGateway(t, nil)
	cs := connect(t, gw, "agent", client{user: approves("once"), url: true}) // no PublicURL, no HTTP request
	msg := requireToolError(t, call(t, cs, "paid-sender", `{"v":"x"}`, nil), toolgatetype.CodeApprovalRequired)
	pending := requestsFor(t, gw, "pat")
	require.Len(t, pending, 1, "the request is made all the same")
	assert.Contains(t, msg, "Approval request "+pending[0].ID+" waits for one")
	assert.Contains(t, msg, "approvals.publicUrl")
	gw.Upstream.RequireCalls(t, 0)
}

// A granted call whose process died before it finished is taken over by
// its retry under the same key, with the grant it began with.
func TestApproverModeRetryTakesOverAnAbandonedGrantedCall(t *testing.T) {
	t.Parallel()
	store := &toolgatetest.DyingStore{Store: memory.New()}
	gw := approverGateway(t, store)
	cs := connectAgent(t, gw, "agent", client{user: approves("once"), url: true})
	e := callSent(t, cs, "paid-sender", `{"v":"x"}`, nil)
	decide(t, gw, "pat", e.ElicitationID, toolgatetype.Decision{Approve: true})

	meta := mcp.Meta{"toolgate/idempotencyKey": "order-7"}
	store.Dying.Store(true)
	body := requireRefusal(t, call(t, cs, "paid-sender", `{"v":"x"}`, meta), toolgatetype.CodeInternal)
	assert.Equal(t, "the gateway could not complete the request", body.Error.Message, "the cause is for the log")
	store.Dying.Store(false)
	assert.Equal(t, toolgatetype.ApprovalStatusUsed, requestOf(t, gw, "agent", e.ElicitationID).Status)

	gw.Clock.Advance(toolgate.DefaultIdempotencyLease + time.Second)
	res := call(t, cs, "paid-sender", `{"v":"x"}`, meta)
	assert.JSONEq(t, `{"value":"x"}`, requireCompleted(t, res))
	assert.Equal(t, executionID(t, res), requestOf(t, gw, "agent", e.ElicitationID).ExecutionID)
	gw.Upstream.RequireCalls(t, 2) // the abandoned run reached it too
	gw.RequireSpent(t, "agent", "0.1100")
}

// headers adds headers to every request of an MCP client.
type headers struct {
	set  map[string]string
	next http.RoundTripper
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}

// Over streamable HTTP the page is linked under the address the request
// reached the server at, as the HTTP API served beside it links it, unless
// the operator gives the address people reach it at.
func TestHTTPApproverModeLinksThePageWhereTheRequestCameIn(t *testing.T) {
	t.Parallel()
	const agentKey = "tg_test_agent_5d0e3b9a71"
	for _, c := range []struct {
		name      string
		publicURL string
		header    map[string]string
		want      func(server string) string
	}{
		{"the request's address and mount prefix", "", nil,
			func(server string) string { return server + "/gw/approvals/" }},
		{"behind a proxy", "", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Prefix": "/edge"},
			func(server string) string {
				return "https://" + strings.TrimPrefix(server, "http://") + "/edge/gw/approvals/"
			}},
		{"the operator's address", "https://gateway.example", map[string]string{"X-Forwarded-Prefix": "/edge"},
			func(string) string { return "https://gateway.example/approvals/" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			gw := approverGateway(t, nil)
			keys := apikey.NewKeyStore()
			require.NoError(t, keys.AddKey("agent", agentKey))
			h, err := mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{Authenticator: keys, PublicURL: c.publicURL})
			require.NoError(t, err)
			inner := http.NewServeMux()
			inner.Handle("/mcp", h)
			outer := http.NewServeMux()
			outer.Handle("/gw/", http.StripPrefix("/gw", inner))
			srv := httptest.NewServer(outer)
			t.Cleanup(func() {
				h.Close()
				srv.Close()
			})

			set := map[string]string{"Authorization": "Bearer " + agentKey}
			for k, v := range c.header {
				set[k] = v
			}
			transport := &mcp.StreamableClientTransport{Endpoint: srv.URL + "/gw/mcp", HTTPClient: &http.Client{Transport: headers{set, http.DefaultTransport}}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: approves("once").elicit,
				Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
					Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
				}},
				MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
			}).Connect(context.Background(), transport, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })

			e := callSent(t, cs, "paid-sender", `{"v":"x"}`, nil)
			assert.Equal(t, c.want(srv.URL)+e.ElicitationID, e.URL)
			decide(t, gw, "pat", e.ElicitationID, toolgatetype.Decision{Approve: true})
			requireCompleted(t, call(t, cs, "paid-sender", `{"v":"x"}`, nil))
			gw.Upstream.RequireCalls(t, 1)
		})
	}
}
