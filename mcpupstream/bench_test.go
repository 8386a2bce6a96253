package mcpupstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
)

// BenchmarkQuoteCallMCP puts a quote and a call of an upstream MCP server's
// tool through a gateway on the memory store (gateway) next to calling the
// same server directly with the go-sdk client (direct), in one run, for
// each way of reaching the server: in process (go-sdk's in-memory
// transport), over stdio (upstreamtest's server as a child process) and over
// streamable HTTP (on 127.0.0.1). The tool is echo: structured content,
// checked against its output schema; every call is a new one (a new quote
// and Idempotency-Key), approved by the caller's standing policy. Each
// reports p50-ns/op, the median of the iterations, and cpu-ns/op, this
// process's CPU per iteration (the server's too, but for stdio, whose
// server is another process), beside the mean; BENCHMARKS.md has the
// figures and what the difference is made of.
func BenchmarkQuoteCallMCP(b *testing.B) {
	for _, transport := range []string{"inprocess", "stdio", "http"} {
		b.Run(transport+"/direct", func(b *testing.B) {
			cs := directSession(b, transport)
			args := json.RawMessage(`{"text":"bench"}`)
			measure(b, func() error {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: upstreamtest.Echo, Arguments: args})
				return err
			})
		})
		b.Run(transport+"/gateway", func(b *testing.B) {
			gw := benchGateway(b, transport)
			ctx := context.Background()
			n := 0
			input := json.RawMessage(`{"text":"bench"}`)
			measure(b, func() error {
				q, err := gw.Quote(ctx, "bench", "up.echo")
				if err != nil {
					return err
				}
				n++
				res, err := gw.Call(ctx, "bench", toolgatetype.CallRequest{Tool: "up.echo", QuoteID: q.Quote.ID, Input: input,
					IdempotencyKey: fmt.Sprintf("bench-%d", n)})
				if err != nil {
					return err
				}
				if res.Execution.Status != toolgatetype.StatusCompleted {
					return fmt.Errorf("%s: %v", res.Execution.Status, res.Execution.Error)
				}
				return nil
			})
		})
	}
}

// measure runs op b.N times, timing each, and reports the median.
func measure(b *testing.B, op func() error) {
	b.Helper()
	for range 50 { // warm up connections, pools and caches
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	report := testproc.ReportCPU(b)
	defer report()
	for range b.N {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns/op")
}

// benchServer is how a benchmark reaches upstreamtest's server.
func benchServer(b *testing.B, transport string) mcpupstream.Server {
	s := mcpupstream.Server{ID: "up"}
	switch transport {
	case "inprocess":
		s.Transport = inProcess(b, upstreamtest.New(nil).MCP)
	case "stdio":
		s.Command = []string{stdioServerPath(b)}
	case "http":
		srv := upstreamtest.New(nil)
		ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.MCP }, nil))
		b.Cleanup(func() {
			ts.CloseClientConnections()
			ts.Close()
		})
		s.URL = ts.URL + "/mcp"
	}
	return s
}

// directSession is a go-sdk client session to the server, as an agent
// without the gateway would have.
func directSession(b *testing.B, transport string) *mcp.ClientSession {
	s := benchServer(b, transport)
	var t mcp.Transport
	switch {
	case s.Transport != nil:
		t = s.Transport()
	case s.Command != nil:
		t = &mcp.CommandTransport{Command: exec.Command(s.Command[0])}
	default:
		t = &mcp.StreamableClientTransport{Endpoint: s.URL}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), t, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	// The gateway lists the tools; so does the direct client, so both call
	// with the tool known.
	for _, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			b.Fatal(err)
		}
	}
	return cs
}

// benchGateway is a gateway on the memory store over the server's tools,
// which the operator declares read-only and trusts: a call needs no
// approval of its own. No metrics, no traces.
func benchGateway(b *testing.B, transport string) *toolgate.Gateway {
	reg := registry.New()
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg, SpendControls: testproc.RaisedLimits{}})
	if err != nil {
		b.Fatal(err)
	}
	s := benchServer(b, transport)
	s.Defaults = mcpupstream.ToolConfig{Capabilities: declared(), Trust: registry.Trust{EndpointVerified: registry.Bool(true)}}
	start(b, reg, nil, s)
	q, err := gw.Quote(context.Background(), "bench", "up.echo")
	if err != nil {
		b.Fatal(err)
	}
	if q.Policy.Approval.Requirement != toolgatetype.RequirementCoveredByUserPolicy {
		b.Fatalf("echo needs %s", q.Policy.Approval.Requirement)
	}
	return gw
}
