package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Distinctive keys, to look for in logs.
const (
	aliceKey = "tg_test_alice_3f9c2a7d1e"
	bobKey   = "tg_test_bob_8b41d07c55"
)

// mcpHTTP serves gw's MCP handler for alice and bob on a real HTTP server
// and returns its /mcp URL and what the handler logged.
func mcpHTTP(t *testing.T, gw *toolgatetest.Gateway) (string, *mcpserver.Handler, *testproc.SyncBuffer) {
	t.Helper()
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
	require.NoError(t, keys.AddKey("bob", bobKey))
	require.NoError(t, keys.AddApproverKey("pat", patApproverKey))
	logs := &testproc.SyncBuffer{}
	h, err := mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{Authenticator: keys, Logger: slogTo(logs)})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return srv.URL + "/mcp", h, logs
}

// bearer adds a key to every request, as an MCP client configured with a
// header does.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// connectHTTP connects the SDK's client to url with key.
func connectHTTP(t *testing.T, url, key string, u *user) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if u != nil {
		opts.ElicitationHandler = u.elicit
	}
	transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, opts).Connect(context.Background(), transport, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestHTTPServesEachPrincipalItsOwnTools(t *testing.T) {
	t.Parallel()
	blockEcho := toolgatetype.SpendControls{Tools: map[string]toolgatetype.ToolSpendControls{"echo": {Allowed: registry.Bool(false)}}}
	gw := toolgatetest.New(t, &toolgatetest.Options{Config: controls("bob", blockEcho)})
	url, _, logs := mcpHTTP(t, gw)

	u := approves("once")
	alice := connectHTTP(t, url, aliceKey, u)
	bob := connectHTTP(t, url, bobKey, nil)
	assert.Contains(t, listAll(t, alice), "echo")
	assert.NotContains(t, listAll(t, bob), "echo")

	// The approval form reaches alice's client over her session's stream.
	res := call(t, alice, "echo", `{"v":"over http"}`, nil)
	assert.JSONEq(t, `{"value":"over http"}`, requireCompleted(t, res))
	assert.Equal(t, []string{"Approve Echo for $0.0000? version " + digestOf(t, gw, "echo")}, u.asked())
	res = call(t, bob, "echo", `{"v":"x"}`, nil)
	requireRefusal(t, res, "spend_limit_exceeded")
	gw.Upstream.RequireCalls(t, 1)

	for _, key := range []string{aliceKey, bobKey} {
		assert.NotContains(t, logs.String(), key)
	}
}

func TestHTTPRefusesRequestsWithoutACallersKey(t *testing.T) {
	t.Parallel()
	url, _, _ := mcpHTTP(t, toolgatetest.New(t, nil))
	for _, tc := range []struct {
		name, method, authorization string
	}{
		{"no key", http.MethodPost, ""},
		{"unknown key", http.MethodPost, "Bearer tg_test_nobody"},
		{"not bearer", http.MethodPost, "Basic " + aliceKey},
		{"no key on the event stream", http.MethodGet, ""},
		{"no key to end a session", http.MethodDelete, ""},
	} {
		r := send(t, tc.method, url, tc.authorization, "", initialize)
		assert.Equal(t, http.StatusUnauthorized, r.status, tc.name)
		assert.Equal(t, `Bearer realm="toolgate"`, r.header.Get("WWW-Authenticate"), tc.name)
		assert.Contains(t, string(r.body), `"error":{"code":-32600,"message":"a valid API key is required`, tc.name)
	}
}

// patApproverKey is an approver's key: right, but of the wrong kind for /mcp.
const patApproverKey = "tg_test_pat_approver_for_mcp"

// An approver's key on /mcp is told it is the wrong kind of key, as the
// HTTP API tells it, not that it is unknown.
func TestHTTPNamesTheKindOfKeyItNeeds(t *testing.T) {
	t.Parallel()
	url, _, _ := mcpHTTP(t, toolgatetest.New(t, nil))
	r := send(t, http.MethodPost, url, "Bearer "+patApproverKey, "", initialize)
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Contains(t, string(r.body), "caller_key_required: this route needs a caller's API key; an approver key was given")
	assert.NotContains(t, string(r.body), patApproverKey)
}

func TestHTTPSessionAnswersOnlyItsPrincipal(t *testing.T) {
	t.Parallel()
	url, _, _ := mcpHTTP(t, toolgatetest.New(t, nil))
	r := send(t, http.MethodPost, url, "Bearer "+aliceKey, "", initialize)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	session := r.header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	r = send(t, http.MethodPost, url, "Bearer "+aliceKey, session, initialized)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)

	// bob's key on alice's session: refused, whatever he asks.
	r = send(t, http.MethodPost, url, "Bearer "+bobKey, session, listRequest)
	assert.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	r = send(t, http.MethodPost, url, "Bearer "+aliceKey, session, listRequest)
	assert.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Contains(t, string(r.body), `"name":"echo"`)
}

func TestHTTPMalformedAndOversizedRequests(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	url, _, _ := mcpHTTP(t, gw)
	auth := "Bearer " + aliceKey

	huge := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}`
	r := send(t, http.MethodPost, url, auth, "", huge)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Contains(t, string(r.body), "larger than 1048576 bytes")

	r = send(t, http.MethodPost, url, auth, "", initialize)
	session := r.header.Get("Mcp-Session-Id")
	send(t, http.MethodPost, url, auth, session, initialized)
	for _, tc := range []struct{ body, want string }{
		{`{not json`, ""},
		{`[`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"nope"}`, `"code":-32602`},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":"nope"}}`, `arguments: must be an object`},
		{`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`, ""},
	} {
		r = send(t, http.MethodPost, url, auth, session, tc.body)
		assert.Less(t, r.status, 500, "%s: %s", tc.body, r.body)
		if tc.want == "" {
			assert.Equal(t, http.StatusBadRequest, r.status, "%s: %s", tc.body, r.body)
		} else {
			assert.Contains(t, string(r.body), tc.want, tc.body)
		}
	}
	gw.Upstream.RequireCalls(t, 0)

	// The server is still serving.
	cs := connectHTTP(t, url, aliceKey, nil)
	assert.Contains(t, listAll(t, cs), "echo")
}

func TestHTTPReSentRequestRunsOnce(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{coveredEcho()}})
	url, _, _ := mcpHTTP(t, gw)
	auth := "Bearer " + aliceKey
	r := send(t, http.MethodPost, url, auth, "", initialize)
	session := r.header.Get("Mcp-Session-Id")
	send(t, http.MethodPost, url, auth, session, initialized)

	callReq := `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"echo","arguments":{"v":"once"}}}`
	first := send(t, http.MethodPost, url, auth, session, callReq)
	again := send(t, http.MethodPost, url, auth, session, callReq)
	require.Equal(t, http.StatusOK, first.status, "%s", first.body)
	id := first.executionID(t)
	assert.Equal(t, id, again.executionID(t))
	gw.Upstream.RequireCalls(t, 1)

	// The same id in a new session is a new request.
	r = send(t, http.MethodPost, url, auth, "", initialize)
	other := r.header.Get("Mcp-Session-Id")
	send(t, http.MethodPost, url, auth, other, initialized)
	assert.NotEqual(t, id, send(t, http.MethodPost, url, auth, other, callReq).executionID(t))
	gw.Upstream.RequireCalls(t, 2)
}

func TestHTTPCloseEndsEventStreams(t *testing.T) {
	t.Parallel()
	url, h, _ := mcpHTTP(t, toolgatetest.New(t, nil))
	auth := "Bearer " + aliceKey
	r := send(t, http.MethodPost, url, auth, "", initialize)
	session := r.header.Get("Mcp-Session-Id")
	send(t, http.MethodPost, url, auth, session, initialized)

	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, resp.Body)
		close(ended)
	}()

	h.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second): // a guard against hanging, not a speed check
		t.Fatal("the event stream is still open after Close")
	}
}

// Raw JSON-RPC messages for the tests that speak HTTP themselves.
const (
	initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + legacyProtocol +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`
	listRequest = `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
)

type httpReply struct {
	status int
	header http.Header
	body   []byte
}

// send makes one HTTP request to the MCP endpoint as a streamable HTTP
// client does (POST bodies are JSON; answers may come as JSON or as an
// event stream, whose first data line is returned).
func send(t *testing.T, method, url, authorization, session, body string) httpReply {
	t.Helper()
	var rd io.Reader
	if method == http.MethodPost {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", legacyProtocol)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	r := httpReply{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			// The first message, past the priming event (an id, no data)
			// that lets a session's stream resume.
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" {
				r.body = []byte(data)
				break
			}
		}
		return r
	}
	r.body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	return r
}

// executionID is the execution id of a tools/call answer.
func (r httpReply) executionID(t *testing.T) string {
	t.Helper()
	var msg struct {
		Result mcp.CallToolResult `json:"result"`
	}
	require.NoError(t, json.NewDecoder(bytes.NewReader(r.body)).Decode(&msg), "%s", r.body)
	require.False(t, msg.Result.IsError, "%s", r.body)
	id, _ := msg.Result.Meta["toolgate/executionId"].(string)
	require.NotEmpty(t, id, "%s", r.body)
	return id
}

// Host and Origin are checked before the key and before the body: a page a
// browser shows cannot reach the server by pointing a name of its own at
// the server's address (DNS rebinding), nor call it from another site.
func TestHTTPRefusesForeignHostsAndOrigins(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
	h, err := mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{
		Authenticator: keys,
		PublicURL:     "https://gateway.example.com/toolgate",
		AllowedHosts:  []string{"mcp.internal.example", "proxy.example:8443"},
	})
	require.NoError(t, err)
	srv := httptest.NewServer(h) // on loopback
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	own := strings.TrimPrefix(srv.URL, "http://")
	post := func(host, origin, key string) httpReply {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(initialize))
		require.NoError(t, err)
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return httpReply{status: resp.StatusCode, header: resp.Header, body: body}
	}

	// A foreign Origin, a foreign Host: 403, before the key is looked at,
	// each saying which header and how to allow it.
	r := post(own, "http://evil.example.com", aliceKey)
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.Contains(t, string(r.body), `the Origin header names \"http://evil.example.com\"`)
	assert.Contains(t, string(r.body), "allowedHosts")
	r = post("evil.example.com", "", aliceKey)
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.Contains(t, string(r.body), `the Host header names \"evil.example.com\"`)
	assert.Contains(t, string(r.body), "allowedHosts")
	assert.Equal(t, http.StatusForbidden, post("evil.example.com", "http://evil.example.com", "").status, "not 401: refused first")

	// Both allowed: served.
	assert.Equal(t, http.StatusOK, post(own, "http://"+own, aliceKey).status)
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"loopback's name, on loopback", "localhost:1234", "http://localhost:3000", http.StatusOK},
		{"loopback's address", "127.0.0.1:9", "", http.StatusOK},
		{"the public URL's host", "gateway.example.com", "https://gateway.example.com", http.StatusOK},
		{"a listed name, any port", "mcp.internal.example:8080", "https://mcp.internal.example", http.StatusOK},
		{"a listed name and port", "proxy.example:8443", "", http.StatusOK},
		{"a listed name on another port", "proxy.example:8444", "", http.StatusForbidden},
		{"a name only like a listed one", "mcp.internal.example.evil.com", "", http.StatusForbidden},
		{"an allowed Host with a foreign Origin", "gateway.example.com", "https://evil.example.com", http.StatusForbidden},
		{"the opaque origin", own, "null", http.StatusForbidden},
		{"another scheme", own, "file://" + own, http.StatusForbidden},
	} {
		assert.Equal(t, tc.want, post(tc.host, tc.origin, aliceKey).status, tc.name)
	}

	// Refused before the body is read: a body that cannot be read is never
	// noticed.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/mcp", unreadable{t})
	req.Host = "evil.example.com"
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusForbidden, rec.Code)

	_, err = mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{AllowedHosts: []string{"https://mcp.example.com"}})
	assert.ErrorContains(t, err, `AllowedHosts: "https://mcp.example.com" is not a host name or IP address`)
}

// unreadable fails the test that reads it.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("the body was read")
	return 0, io.ErrUnexpectedEOF
}
