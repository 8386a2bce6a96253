package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// BenchmarkCallOverHTTP puts one call of earthquake-search over MCP
// (tools/call on streamable HTTP, through the SDK's client) next to the
// same call through the HTTP API (a quote, then the call), in the same run,
// on one server on 127.0.0.1 serving both, over one gateway on the memory
// store whose provider answers at once with the recorded ten-event body.
// Both approve the digest themselves (_meta["toolgate/approval"], the
// call body's approval), and every call is a new one. In parallel, each
// goroutine is its own principal with its own session or connection.
// Each reports cpu-ns/op, the process's CPU time per call (client and
// server both), beside ns/op. The MCP calls are made on the newest protocol
// revision (mcp/...) and, in a session, on 2025-11-25. BENCHMARKS.md has
// the figures.
//
// mcp-raw/... is the mcp/... call sent by a client as lean as the HTTP
// API's (the request's bytes written once, the answer searched for the
// structured content rather than decoded), so that the two doors' figures
// differ by what the servers do, not by what their clients do: the SDK's
// client decodes each answer twice, which is about a third of mcp/...'s
// CPU.
func BenchmarkCallOverHTTP(b *testing.B) {
	env := newBenchServer(b)
	b.Run("mcp/serial", func(b *testing.B) { env.run(b, false, env.mcpCaller) })
	b.Run("mcp-raw/serial", func(b *testing.B) { env.run(b, false, env.rawMCPCaller) })
	b.Run("mcp-2025-11-25/serial", func(b *testing.B) { env.run(b, false, env.mcpCallerOn(legacyProtocol)) })
	b.Run("httpapi/serial", func(b *testing.B) { env.run(b, false, env.apiCaller) })
	b.Run("mcp/parallel", func(b *testing.B) { env.run(b, true, env.mcpCaller) })
	b.Run("mcp-raw/parallel", func(b *testing.B) { env.run(b, true, env.rawMCPCaller) })
	b.Run("mcp-2025-11-25/parallel", func(b *testing.B) { env.run(b, true, env.mcpCallerOn(legacyProtocol)) })
	b.Run("httpapi/parallel", func(b *testing.B) { env.run(b, true, env.apiCaller) })
}

const benchTool = "earthquake-search"

type benchServer struct {
	url    string
	digest string
	keys   *apikey.KeyStore
	next   atomic.Int64 // principals handed out
}

func newBenchServer(b *testing.B) *benchServer {
	b.Helper()
	reg := registry.New()
	if err := reg.Register(tools.EarthquakeSearch()); err != nil {
		b.Fatal(err)
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{
		Registry:      reg,
		Transport:     testproc.BodyTransport{Body: recorded.Body(recorded.USGSTenFeatures)},
		SpendControls: testproc.RaisedLimits{},
	})
	if err != nil {
		b.Fatal(err)
	}
	v, err := reg.Lookup(benchTool)
	if err != nil {
		b.Fatal(err)
	}
	env := &benchServer{digest: v.Digest, keys: apikey.NewKeyStore()}
	agents, err := mcpserver.NewHandler(gw, &mcpserver.Options{Authenticator: env.keys})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", agents)
	mux.Handle("/", httpapi.NewHandler(gw, &httpapi.Options{Authenticator: env.keys}))
	srv := httptest.NewServer(mux)
	b.Cleanup(func() {
		agents.Close()
		srv.Close()
	})
	env.url = srv.URL
	return env
}

// caller makes one whole call each time it is called.
type caller func(ctx context.Context, i int) error

// run times calls made by one caller (serial) or one per goroutine.
func (e *benchServer) run(b *testing.B, parallel bool, newCaller func(b *testing.B) caller) {
	ctx := context.Background()
	if !parallel {
		call := newCaller(b)
		b.ReportAllocs()
		b.ResetTimer()
		defer testproc.ReportCPU(b)()
		for i := 0; i < b.N; i++ {
			if err := call(ctx, i); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer testproc.ReportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		call := newCaller(b)
		for i := 0; pb.Next(); i++ {
			if err := call(ctx, i); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// principal adds a new principal and returns its key.
func (e *benchServer) principal(b *testing.B) string {
	n := e.next.Add(1)
	key := "tg_bench_" + strconv.FormatInt(n, 10)
	if err := e.keys.AddKey("bench-"+strconv.FormatInt(n, 10), key); err != nil {
		b.Fatal(err)
	}
	return key
}

// mcpCaller is an MCP client of its own principal, on the newest protocol
// revision (2026-07-28, each request standing alone); each tools/call is a
// new request, so a new call.
func (e *benchServer) mcpCaller(b *testing.B) caller { return e.mcpCallerWith(b, e.principal(b)) }

// mcpCallerOn is mcpCaller on protocol version, in a session before
// 2026-07-28.
func (e *benchServer) mcpCallerOn(version string) func(b *testing.B) caller {
	return func(b *testing.B) caller { return e.mcpClient(b, e.principal(b), version) }
}

// mcpCallerWith is an MCP client that sends credential, a key or a token.
func (e *benchServer) mcpCallerWith(b *testing.B, key string) caller { return e.mcpClient(b, key, "") }

func (e *benchServer) mcpClient(b *testing.B, key, version string) caller {
	transport := &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	params := &mcp.CallToolParams{Name: benchTool, Arguments: json.RawMessage(`{"starttime":"2024-09-25"}`),
		Meta: mcp.Meta{"toolgate/approval": e.digest}}
	return func(ctx context.Context, _ int) error {
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			return err
		}
		if res.IsError || res.StructuredContent == nil {
			return fmt.Errorf("the call failed: %v", res.Content)
		}
		return nil
	}
}

// apiCaller is a caller of the HTTP API with its own principal: a quote,
// then the call under it with a new Idempotency-Key.
func (e *benchServer) apiCaller(b *testing.B) caller { return e.apiCallerWith(b, e.principal(b)) }

// apiCallerWith is a caller of the HTTP API that sends credential, a key
// or a token.
func (e *benchServer) apiCallerWith(b *testing.B, key string) caller {
	client := &http.Client{Transport: bearer{key, http.DefaultTransport}}
	post := func(ctx context.Context, path string, body []byte, header ...string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode >= 300 {
			err = fmt.Errorf("%s: %d %s", path, resp.StatusCode, out)
		}
		return out, err
	}
	return func(ctx context.Context, i int) error {
		out, err := post(ctx, "/v1/tools/"+benchTool+"/quote", nil)
		if err != nil {
			return err
		}
		var q toolgatetype.QuoteResult
		if err := json.Unmarshal(out, &q); err != nil {
			return err
		}
		body, err := json.Marshal(map[string]any{"quoteId": q.Quote.ID, "input": json.RawMessage(`{"starttime":"2024-09-25"}`),
			"approval": map[string]string{"manifestDigest": e.digest}})
		if err != nil {
			return err
		}
		out, err = post(ctx, "/v1/tools/"+benchTool+"/call", body, "Idempotency-Key", "k-"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		if !bytes.Contains(out, []byte(`"status":"completed"`)) {
			return fmt.Errorf("the call failed: %s", out)
		}
		return nil
	}
}

// rawMCPCaller is mcpCaller without the SDK's client: one POST per call,
// with the headers and _meta the SDK's client sends under 2026-07-28, and
// an answer that must carry the structured content and no isError.
func (e *benchServer) rawMCPCaller(b *testing.B) caller {
	key := e.principal(b)
	client := &http.Client{}
	return func(ctx context.Context, i int) error {
		body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"_meta":{` +
			`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","toolgate/approval":"` + e.digest + `"},` +
			`"name":"` + benchTool + `","arguments":{"starttime":"2024-09-25"}}}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/mcp", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", benchTool)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"structuredContent"`)) ||
			bytes.Contains(out, []byte(`"isError":true`)) {
			return fmt.Errorf("the call failed: %d %s", resp.StatusCode, out)
		}
		return nil
	}
}
