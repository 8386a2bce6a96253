package mcpupstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// stdioServer is upstreamtest's server as a program, built once.
var stdioServer testproc.Binary

func TestMain(m *testing.M) {
	code := m.Run()
	stdioServer.Remove()
	os.Exit(code)
}

// stdioServerPath builds upstreamtest's stdio server.
func stdioServerPath(t testing.TB) string {
	path, _ := stdioServer.Build(t, "../internal/upstreamtest/cmd/upstreamtest-server", false)
	return path
}

// inProcess is a transport to srv in this process, a fresh one for each
// connection.
func inProcess(t testing.TB, srv *mcp.Server) func() mcp.Transport {
	return func() mcp.Transport {
		client, server := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), server, nil)
		if err != nil {
			t.Errorf("connect the in-process server: %v", err)
			return client
		}
		t.Cleanup(func() { _ = ss.Close() })
		return client
	}
}

// testLog is a logger whose lines a test can read.
type testLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *testLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *testLog) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// start starts servers into reg, for the test's length.
func start(t testing.TB, reg *registry.Registry, opts *mcpupstream.Options, servers ...mcpupstream.Server) *mcpupstream.Upstreams {
	t.Helper()
	if opts == nil {
		opts = &mcpupstream.Options{}
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = time.Second
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = time.Second
	}
	u, err := mcpupstream.Start(context.Background(), reg, servers, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = u.Close() })
	return u
}

// gateway is a test gateway with no tools of its own.
func gateway(t testing.TB, cfg *toolgate.Config) *toolgatetest.Gateway {
	return toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{}, Config: cfg})
}

var keys atomic.Int64

// call quotes tool and calls it with input, approving the quoted digest.
func call(t testing.TB, g *toolgatetest.Gateway, tool, input string) (*toolgatetype.CallResult, error) {
	t.Helper()
	q := g.MustQuote(t, "alice", tool)
	req := toolgatetype.CallRequest{Tool: tool, QuoteID: q.Quote.ID, Input: json.RawMessage(input),
		IdempotencyKey: fmt.Sprintf("k-%d", keys.Add(1))}
	if q.Quote.ManifestDigest != nil {
		req.ApprovalDigest = *q.Quote.ManifestDigest
	}
	return g.Call(context.Background(), "alice", req)
}

// declared is a set of capabilities that leaves a tool callable with an
// approval of its digest: declared, read-only, closed world.
func declared() *registry.Capabilities {
	return &registry.Capabilities{ReadOnly: registry.Bool(true), OpenWorld: registry.Bool(false), SeesUntrustedContent: registry.Bool(false), DataRetention: "none"}
}

func perCall(amount string) *registry.Pricing {
	return &registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString(amount)}
}

// writes is the operator's word that a tool writes, and is not retry-safe.
var writes = mcpupstream.ToolConfig{Capabilities: &registry.Capabilities{ReadOnly: registry.Bool(false), WritesExternalData: registry.Bool(true)}}

// verified is the operator's trust in a paid tool.
func verified() registry.Trust {
	return registry.Trust{PaymentVerified: registry.Bool(true), EndpointVerified: registry.Bool(true)}
}

// eventually waits up to 10 s for cond.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newUpstream is upstreamtest's server in process.
func newUpstream() *upstreamtest.Server { return upstreamtest.New(nil) }
