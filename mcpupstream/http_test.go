package mcpupstream_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// httpUpstream serves upstreamtest's server over streamable HTTP, and can
// forget every session it has, as a server that restarts does.
type httpUpstream struct {
	*httptest.Server
	srv     *upstreamtest.Server
	handler atomic.Pointer[http.Handler]

	mu   sync.Mutex
	auth map[string]int // Authorization values seen, and how often
	// drop is how many tools/call requests to come the server reads whole
	// and then drops the connection of, without a word.
	drop atomic.Int32
}

func newHTTPUpstream(t *testing.T) *httpUpstream {
	u := &httpUpstream{srv: newUpstream(), auth: map[string]int{}}
	u.forget()
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.auth[r.Header.Get("Authorization")]++
		u.mu.Unlock()
		if r.Method == http.MethodPost && u.drop.Load() > 0 {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"method":"tools/call"`) && u.drop.Add(-1) >= 0 {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		(*u.handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		u.CloseClientConnections() // event streams would keep Close waiting
		u.Close()
	})
	return u
}

// forget replaces the handler, so every session id given so far is unknown
// (404).
func (u *httpUpstream) forget() {
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv.MCP }, nil)
	u.handler.Store(&h)
}

func (u *httpUpstream) authSeen() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := map[string]int{}
	for k, v := range u.auth {
		out[k] = v
	}
	return out
}

func TestAnHTTPServerGetsItsCredentialAndNothingShowsIt(t *testing.T) {
	t.Parallel()
	const secret = "tg-http-cred-5b1e77d0-DISTINCTIVE"
	up := newHTTPUpstream(t)
	var log testLog
	g := gateway(t, nil)
	u := start(t, g.Registry, &mcpupstream.Options{Logger: log.logger(), LookupEnv: func(k string) (string, bool) {
		if k == "UPSTREAM_TOKEN" {
			return secret, true
		}
		return "", false
	}}, mcpupstream.Server{
		ID: "web", URL: up.URL + "/mcp",
		Credential: &mcpupstream.Credential{Header: "Authorization", Scheme: "Bearer", Value: mcpupstream.Value{Env: "UPSTREAM_TOKEN"}},
		Defaults:   mcpupstream.ToolConfig{Capabilities: declared()},
	})
	require.Equal(t, "up", u.Health()["web"], "a loopback URL the operator named is allowed")
	res, err := call(t, g, "web.echo", `{"text":"over http"}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	seen := up.authSeen()
	require.Len(t, seen, 1, "every request carries the credential")
	require.Contains(t, seen, "Bearer "+secret)

	// The upstream echoing the credential back gets it out of the output.
	res, err = call(t, g, "web.echo", `{"text":"`+secret+`"}`)
	out := toolgatetest.RequireCompleted(t, res, err, "0.0000")
	require.JSONEq(t, `{"text":"[redacted]"}`, string(out))

	entries, _, err := g.List(context.Background(), "", 100, 0, toolgatetype.EntryOptions{})
	require.NoError(t, err)
	raw, err := json.Marshal(entries)
	require.NoError(t, err)
	require.NotContains(t, string(raw), secret)
	require.NotContains(t, log.String(), secret)
	require.Equal(t, "http", entries[0].Upstream.Transport)
}

func TestAForgottenHTTPSessionIsStartedAgain(t *testing.T) {
	t.Parallel()
	up := newHTTPUpstream(t)
	g := gateway(t, nil)
	u := start(t, g.Registry, nil, mcpupstream.Server{ID: "web", URL: up.URL + "/mcp",
		Defaults: mcpupstream.ToolConfig{Capabilities: declared()}, Tools: map[string]mcpupstream.ToolConfig{upstreamtest.WriteNote: writes}})
	res, err := call(t, g, "web.write-note", `{"note":"first"}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")

	up.forget()
	res, err = call(t, g, "web.write-note", `{"note":"second"}`)
	out := toolgatetest.RequireCompleted(t, res, err, "0.0000")
	require.Contains(t, string(out), "saved: second", "sent on a new session: the old one had run nothing")
	require.Equal(t, 2, up.srv.Runs(upstreamtest.WriteNote), "each call ran once")
	eventually(t, "the server to be up", func() bool { return u.Health()["web"] == "up" })
}

func TestAnHTTPServerThatIsGoneIsDownAndCallsFailUncharged(t *testing.T) {
	t.Parallel()
	up := newHTTPUpstream(t)
	g := gateway(t, nil)
	u := start(t, g.Registry, nil, mcpupstream.Server{ID: "web", URL: up.URL + "/mcp",
		Defaults: mcpupstream.ToolConfig{Capabilities: declared(), Pricing: perCall("0.0100"), Trust: verified()},
		Tools:    map[string]mcpupstream.ToolConfig{upstreamtest.WriteNote: writes}})
	up.CloseClientConnections()
	up.Close()
	// Long enough for the client to see its idle connections closed: a
	// request written to one the server had closed might have reached it.
	time.Sleep(200 * time.Millisecond)
	res, err := call(t, g, "web.write-note", `{"note":"nobody there"}`)
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusFailed, res.Execution.Status, "it provably never left: failed, not ambiguous")
	require.True(t, strings.HasPrefix(res.Execution.Error.Message, "the MCP server web"), res.Execution.Error.Message)
	g.RequireSpent(t, "alice", "0.0000")
	eventually(t, "the server to be seen down", func() bool { return u.Health()["web"] == "down" })
}

func TestAnHTTPAnswerLostMidCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		retrySafe bool
		want      toolgatetype.Status
		runs      int
	}{
		{"not retry-safe: ambiguous", false, toolgatetype.StatusAmbiguous, 0},
		{"retry-safe: sent again on the session, once", true, toolgatetype.StatusCompleted, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newHTTPUpstream(t)
			g := gateway(t, nil)
			note := writes
			note.Trust.RetrySafe = registry.Bool(tc.retrySafe)
			start(t, g.Registry, nil, mcpupstream.Server{ID: "web", URL: up.URL + "/mcp",
				Defaults: mcpupstream.ToolConfig{Capabilities: declared()}, Tools: map[string]mcpupstream.ToolConfig{upstreamtest.WriteNote: note}})
			up.drop.Store(1)
			res, err := call(t, g, "web.write-note", `{"note":"lost"}`)
			require.NoError(t, err)
			require.Equal(t, tc.want, res.Execution.Status, "%+v", res.Execution.Error)
			require.Equal(t, tc.runs, up.srv.Runs(upstreamtest.WriteNote))
		})
	}
}
