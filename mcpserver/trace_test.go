package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
)

// secretArg is an argument value that must never reach a span.
const secretArg = "sk-arg-7Q2x9vW"

// tracedGateway is a gateway tracing into spans, with the echo tool
// callable without approval and the paid echo asking for it.
func tracedGateway(t *testing.T, tp trace.TracerProvider) *toolgatetest.Gateway {
	t.Helper()
	return toolgatetest.New(t, &toolgatetest.Options{
		Tools:  []*registry.Tool{coveredEcho(), paidEcho()},
		Config: &toolgate.Config{TracerProvider: tp},
	})
}

func recorder() (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	spans := tracetest.NewInMemoryExporter()
	return spans, sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
}

// named returns the one span named name.
func named(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
		if s.Name == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q among %v", name, names)
	return found[0]
}

func attrsOf(s tracetest.SpanStub) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// assertNothingSecret checks every span's name, status, attributes, links
// and events for each secret.
func assertNothingSecret(t *testing.T, spans tracetest.SpanStubs, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		texts := []string{s.Name, s.Status.Description}
		kvs := append([]attribute.KeyValue(nil), s.Attributes...)
		for _, e := range s.Events {
			texts = append(texts, e.Name)
			kvs = append(kvs, e.Attributes...)
		}
		for _, l := range s.Links {
			kvs = append(kvs, l.Attributes...)
		}
		for _, kv := range kvs {
			texts = append(texts, string(kv.Key), kv.Value.Emit())
		}
		for _, text := range texts {
			for _, secret := range secrets {
				assert.NotContains(t, text, secret, "span %q", s.Name)
			}
		}
	}
}

// Each MCP request is a SERVER span named as the OpenTelemetry MCP
// conventions say, and a tools/call's span is the parent of the gateway's
// quote and execute_tool spans for it. No argument becomes an attribute.
func TestSpansOfMCPRequests(t *testing.T) {
	t.Parallel()
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			spans, tp := recorder()
			gw := tracedGateway(t, tp)
			srv, err := mcpserver.NewServer(gw.Gateway, "alice", &mcpserver.Options{TracerProvider: tp})
			require.NoError(t, err)
			cs := connectTo(t, srv, client{version: p.version})
			ctx := context.Background()

			_, err = cs.ListTools(ctx, nil)
			require.NoError(t, err)
			res := call(t, cs, "echo", `{"v":"`+secretArg+`"}`, nil)
			assert.Contains(t, requireCompleted(t, res), secretArg)

			all := spans.GetSpans()
			if p.version == legacyProtocol {
				// A session begins with the handshake.
				init := named(t, all, "initialize")
				assert.Equal(t, trace.SpanKindServer, init.SpanKind)
				named(t, all, "notifications/initialized")
			}
			list := named(t, all, "tools/list")
			assert.Equal(t, trace.SpanKindServer, list.SpanKind)
			assert.Equal(t, "tools/list", attrsOf(list)["mcp.method.name"])
			assert.NotContains(t, attrsOf(list), "gen_ai.operation.name")

			mcpCall := named(t, all, "tools/call echo")
			assert.Equal(t, trace.SpanKindServer, mcpCall.SpanKind)
			a := attrsOf(mcpCall)
			assert.Equal(t, "tools/call", a["mcp.method.name"])
			assert.Equal(t, "echo", a["gen_ai.tool.name"])
			assert.Equal(t, "execute_tool", a["gen_ai.operation.name"])
			assert.Regexp(t, `^[0-9]+$`, a["jsonrpc.request.id"], "the SDK client numbers its requests")
			assert.NotEmpty(t, a["mcp.protocol.version"])
			if p.version != "" {
				assert.Equal(t, p.version, a["mcp.protocol.version"])
			}
			assert.NotContains(t, a, "error.type")
			assert.Equal(t, codes.Unset, mcpCall.Status.Code)

			for _, child := range []string{"quote echo", "execute_tool echo"} {
				s := named(t, all, child)
				assert.Equal(t, mcpCall.SpanContext.SpanID(), s.Parent.SpanID(), "%s is a child of the MCP request", child)
				assert.Equal(t, mcpCall.SpanContext.TraceID(), s.SpanContext.TraceID())
			}
			assert.NotEqual(t, list.SpanContext.TraceID(), mcpCall.SpanContext.TraceID(), "each request its own trace")
			assertNothingSecret(t, all, secretArg)
		})
	}
}

// A refusal is an error span: a protocol error by its JSON-RPC code, a
// tool error as tool_error. A tool name that is not registered never names
// a span.
func TestSpansOfRefusedMCPRequests(t *testing.T) {
	t.Parallel()
	spans, tp := recorder()
	gw := tracedGateway(t, tp)
	srv, err := mcpserver.NewServer(gw.Gateway, "alice", &mcpserver.Options{TracerProvider: tp})
	require.NoError(t, err)
	cs := connectTo(t, srv, client{})
	ctx := context.Background()

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "no-such-" + secretArg, Arguments: json.RawMessage(`{}`)})
	require.Error(t, err)
	unknown := named(t, spans.GetSpans(), "tools/call")
	a := attrsOf(unknown)
	assert.Equal(t, "-32602", a["error.type"])
	assert.Equal(t, "-32602", a["rpc.response.status_code"])
	assert.NotContains(t, a, "gen_ai.tool.name")
	assert.Equal(t, codes.Error, unknown.Status.Code)
	assert.Equal(t, "-32602", unknown.Status.Description, "the code, not the message quoting the name")

	spans.Reset()
	res := call(t, cs, "echo", `{"v":"`+secretArg+`","n":9}`, nil)
	require.True(t, res.IsError)
	bad := named(t, spans.GetSpans(), "tools/call echo")
	assert.Equal(t, "tool_error", attrsOf(bad)["error.type"])
	assert.Equal(t, codes.Error, bad.Status.Code)
	assertNothingSecret(t, spans.GetSpans(), secretArg)
}

// A trace context in the request's _meta, where the MCP conventions carry
// it, is the parent of the request's span.
func TestMCPRequestContinuesTheTraceInMeta(t *testing.T) {
	t.Parallel()
	spans, tp := recorder()
	gw := tracedGateway(t, tp)
	srv, err := mcpserver.NewServer(gw.Gateway, "alice", &mcpserver.Options{TracerProvider: tp})
	require.NoError(t, err)
	cs := connectTo(t, srv, client{})

	agentCtx, agent := tp.Tracer("agent").Start(context.Background(), "agent step")
	meta := mcp.Meta{}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(agentCtx, carrier)
	meta["traceparent"] = carrier.Get("traceparent")
	requireCompleted(t, call(t, cs, "echo", `{"v":"x"}`, meta))
	agent.End()

	mcpCall := named(t, spans.GetSpans(), "tools/call echo")
	assert.Equal(t, agent.SpanContext().TraceID(), mcpCall.SpanContext.TraceID())
	assert.Equal(t, agent.SpanContext().SpanID(), mcpCall.Parent.SpanID())
	assert.True(t, mcpCall.Parent.IsRemote())
	execute := named(t, spans.GetSpans(), "execute_tool echo")
	assert.Equal(t, agent.SpanContext().TraceID(), execute.SpanContext.TraceID())
}

// While a call waits for its user's approval, the form the server sends is
// a CLIENT span under the call's.
func TestApprovalFormIsASpanOfTheCall(t *testing.T) {
	t.Parallel()
	spans, tp := recorder()
	gw := tracedGateway(t, tp)
	srv, err := mcpserver.NewServer(gw.Gateway, "alice", &mcpserver.Options{TracerProvider: tp})
	require.NoError(t, err)
	cs := connectTo(t, srv, client{version: legacyProtocol, user: approves("")})
	requireCompleted(t, call(t, cs, "paid-echo", `{"v":"x"}`, nil))

	all := spans.GetSpans()
	mcpCall := named(t, all, "tools/call paid-echo")
	form := named(t, all, "elicitation/create")
	assert.Equal(t, trace.SpanKindClient, form.SpanKind)
	assert.Equal(t, "elicitation/create", attrsOf(form)["mcp.method.name"])
	assert.Equal(t, mcpCall.SpanContext.SpanID(), form.Parent.SpanID())
	assert.Equal(t, mcpCall.SpanContext.SpanID(), named(t, all, "execute_tool paid-echo").Parent.SpanID())
}

// tracing sends, with every HTTP request, the traceparent its function
// gives ("" for none).
type tracing struct {
	next        http.RoundTripper
	mu          sync.Mutex
	traceparent string
}

func (tr *tracing) set(tp string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.traceparent = tp
}

func (tr *tracing) RoundTrip(r *http.Request) (*http.Response, error) {
	tr.mu.Lock()
	tp := tr.traceparent
	tr.mu.Unlock()
	r = r.Clone(r.Context())
	if tp != "" {
		r.Header.Set("Traceparent", tp)
	}
	return tr.next.RoundTrip(r)
}

// Over streamable HTTP, a request's traceparent header is continued by the
// spans of the messages it carries, and a request without one begins a
// trace of its own, never the trace of the request that began the session.
func TestMCPOverHTTPContinuesTheCallersTrace(t *testing.T) {
	t.Parallel()
	spans, tp := recorder()
	gw := tracedGateway(t, tp)
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
	h, err := mcpserver.NewHandler(gw.Gateway, &mcpserver.Options{Authenticator: keys, TracerProvider: tp})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	server := httptest.NewServer(mux)
	t.Cleanup(func() {
		h.Close()
		server.Close()
	})
	srv := server.URL

	header := &tracing{next: bearer{aliceKey, http.DefaultTransport}}
	_, session := tp.Tracer("agent").Start(context.Background(), "agent session")
	header.set(traceparentOf(session))
	transport := &mcp.StreamableClientTransport{Endpoint: srv + "/mcp", HTTPClient: &http.Client{Transport: header}}
	// In a session (before protocol 2026-07-28), which the spans name.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, nil).
		Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	init := named(t, spans.GetSpans(), "initialize")
	assert.Equal(t, session.SpanContext().SpanID(), init.Parent.SpanID())

	_, step := tp.Tracer("agent").Start(context.Background(), "agent step")
	header.set(traceparentOf(step))
	requireCompleted(t, call(t, cs, "echo", `{"v":"`+secretArg+`"}`, nil))
	mcpCall := named(t, spans.GetSpans(), "tools/call echo")
	assert.Equal(t, step.SpanContext().TraceID(), mcpCall.SpanContext.TraceID())
	assert.Equal(t, step.SpanContext().SpanID(), mcpCall.Parent.SpanID())
	a := attrsOf(mcpCall)
	assert.Equal(t, cs.ID(), a["mcp.session.id"])
	assert.NotEmpty(t, a["mcp.session.id"])
	assert.Equal(t, "tcp", a["network.transport"])
	assert.Equal(t, "http", a["network.protocol.name"])
	assert.Equal(t, mcpCall.SpanContext.SpanID(), named(t, spans.GetSpans(), "execute_tool echo").Parent.SpanID())

	// A trace context in _meta is the MCP client's span: the parent, with
	// the HTTP request's linked.
	spans.Reset()
	_, mcpClient := tp.Tracer("agent").Start(context.Background(), "an MCP client span")
	requireCompleted(t, call(t, cs, "echo", `{"v":"y"}`, mcp.Meta{"traceparent": traceparentOf(mcpClient)}))
	mcpCall = named(t, spans.GetSpans(), "tools/call echo")
	assert.Equal(t, mcpClient.SpanContext().SpanID(), mcpCall.Parent.SpanID())
	require.Len(t, mcpCall.Links, 1)
	assert.Equal(t, step.SpanContext().SpanID(), mcpCall.Links[0].SpanContext.SpanID())

	spans.Reset()
	header.set("")
	_, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	list := named(t, spans.GetSpans(), "tools/list")
	assert.False(t, list.Parent.IsValid(), "a trace of its own, not the session's first request's")
	assertNothingSecret(t, spans.GetSpans(), secretArg, aliceKey)
}

// Without a TracerProvider the server makes no span: the gateway's spans
// for a call made over MCP have no MCP parent.
func TestNoSpansWithoutATracerProvider(t *testing.T) {
	t.Parallel()
	spans, tp := recorder()
	gw := tracedGateway(t, tp)
	cs := connect(t, gw, "alice", client{})
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	requireCompleted(t, call(t, cs, "echo", `{"v":"x"}`, nil))

	var names []string
	for _, s := range spans.GetSpans() {
		names = append(names, s.Name)
		assert.NotEqual(t, trace.SpanKindServer, s.SpanKind)
		assert.False(t, strings.HasPrefix(s.Name, "tools/"), s.Name)
	}
	assert.ElementsMatch(t, []string{"quote echo", "execute_tool echo", "GET"}, names, "the gateway's own spans only")
	assert.False(t, named(t, spans.GetSpans(), "execute_tool echo").Parent.IsValid())
}

func traceparentOf(span trace.Span) string {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpan(context.Background(), span), carrier)
	return carrier.Get("traceparent")
}
