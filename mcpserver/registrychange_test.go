package mcpserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
)

// onLog is a slog handler that calls fn for each record whose message
// contains match.
type onLog struct {
	match string
	fn    func()
}

func (h onLog) Enabled(context.Context, slog.Level) bool { return true }
func (h onLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		h.fn()
	}
	return nil
}
func (h onLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h onLog) WithGroup(string) slog.Handler      { return h }

// A tool registered while the server is being made (an upstream MCP
// server's tools arrive on their own goroutines, at any time) is callable:
// the server follows every registry change after the one it started from,
// and none falls between its first look at the registry and its watching.
func TestToolRegisteredWhileTheServerIsMadeIsCallable(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	// A tool whose schema the SDK refuses makes the server log while it
	// adds the registry's tools: the moment, between its look at the
	// registry and its watching it, that another goroutine registers a
	// tool.
	untyped := coveredEcho()
	untyped.Slug, untyped.Name = "echo-untyped", "Echo Untyped"
	untyped.InputSchema = json.RawMessage(`{"properties":{"v":{"type":"string"}}}`)
	require.NoError(t, gw.Registry.Register(untyped))

	registered := make(chan error, 1)
	var once sync.Once
	logger := slog.New(onLog{match: "refuses a tool's input schema", fn: func() {
		once.Do(func() {
			go func() { registered <- gw.Registry.Register(coveredEcho2()) }()
			// Given the time to finish, unless the server waits for it.
			time.Sleep(100 * time.Millisecond)
		})
	}})
	srv, err := mcpserver.NewServer(gw.Gateway, "alice", &mcpserver.Options{Logger: logger})
	require.NoError(t, err)
	select {
	case err := <-registered:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the registration never finished")
	}
	_, err = gw.Registry.Lookup("echo-two")
	require.NoError(t, err)

	cs := connectTo(t, srv, client{})
	assert.Contains(t, listAll(t, cs), "echo-two")
	assert.JSONEq(t, `{"value":"new"}`, requireCompleted(t, call(t, cs, "echo-two", `{"v":"new"}`, nil)))
}

// A client before protocol 2026-07-28 is asked for its approval within
// the call, which may take the person minutes. What the operator did to
// the tool meanwhile counts when the call is made with the answer: a tool
// removed is not called, nor a tool changed (its quote is of the version
// the person was shown), and nothing is charged.
func TestToolChangedWhileThePersonIsAskedIsNotCalled(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(*toolgatetest.Gateway) error{
		"removed": func(gw *toolgatetest.Gateway) error { return gw.Registry.Remove("paid-echo") },
		"new version": func(gw *toolgatetest.Gateway) error {
			next := paidEcho()
			next.Version++
			next.Pricing.Amount = decimal.RequireFromString("5.0000")
			return gw.Registry.Register(next)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{paidEcho()}})
			srv, err := mcpserver.NewServer(gw.Gateway, "alice", nil)
			require.NoError(t, err)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(context.Background(), st, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = ss.Close() })
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					// While the person reads the question, the operator acts.
					if err := change(gw); err != nil {
						return nil, err
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				},
			}).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })

			res := call(t, cs, "paid-echo", `{"v":"paid"}`, nil)
			require.True(t, res.IsError, "the call ran: %s", text(res))
			gw.Upstream.RequireCalls(t, 0)
			gw.RequireSpent(t, "alice", "0.0000")
		})
	}
}

// A closed server no longer follows the registry: a tool registered after
// Close is not added to the sessions' tools, so nothing is left watching a
// registry on behalf of a server that is done.
func TestClosedServerStopsFollowingTheRegistry(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{coveredEcho()}})
	srv, err := mcpserver.NewServer(gw.Gateway, "alice", nil)
	require.NoError(t, err)
	cs := connectTo(t, srv, client{})
	requireCompleted(t, call(t, cs, "echo", `{"v":"before"}`, nil))

	srv.Close()
	require.NoError(t, gw.Registry.Register(coveredEcho2()))
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo-two", Arguments: json.RawMessage(`{"v":"after"}`)})
	require.Error(t, err, "a tool registered after Close is not the server's")
	assert.Contains(t, err.Error(), "echo-two")
	requireCompleted(t, call(t, cs, "echo", `{"v":"after"}`, nil))
}
