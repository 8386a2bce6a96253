package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// instrumentationName names the MCP server's tracer.
const instrumentationName = "github.com/toolgate/toolgate/mcpserver"

// tracePropagation reads and writes W3C Trace Context, in HTTP headers and
// in _meta, where the OpenTelemetry MCP conventions carry it unprefixed
// ("traceparent", "tracestate").
var tracePropagation = propagation.TraceContext{}

// extraSpanContext names, among the facts the HTTP handler attaches to each
// request's token, the span context of the HTTP request that carried the
// message: a tracing middleware's span, or the caller's traceparent.
const extraSpanContext = "toolgate/spanContext"

// spanTracer makes a span of each MCP message the server handles or sends,
// following the OpenTelemetry semantic conventions for MCP: named
// "{mcp.method.name}", or "tools/call {tool}" for a registered tool, with
// mcp.method.name, mcp.session.id, mcp.protocol.version,
// jsonrpc.request.id (for tools/call, the one request whose id the SDK
// lets through), gen_ai.tool.name and gen_ai.operation.name, and
// error.type when the answer is an error. Arguments, results and keys are
// never attributes: a tool name appears only once it names a registered
// tool, so no caller-chosen text becomes a span name.
//
// A handled message's span is the parent of what the gateway does for it,
// the quote and execute_tool spans of a tools/call among them. Its own
// parent is the trace context in the message's _meta when there is one
// (the transport's then linked), else the HTTP request's that carried it,
// else, on other transports, the context the session was served under.
type spanTracer struct {
	tracer trace.Tracer
	// known reports whether a tool name is a registered tool's slug.
	known func(name string) bool
	// callNames holds "tools/call {slug}" by slug, made once.
	callNames sync.Map
}

func newSpanTracer(tp trace.TracerProvider, known func(string) bool) *spanTracer {
	return &spanTracer{tracer: tp.Tracer(instrumentationName), known: known}
}

// received is receiving middleware: a SERVER span for each message the
// client sends.
func (s *spanTracer) received(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		parent, links := s.parentOf(ctx, req)
		name, attrs := s.describe(method, req)
		ctx, span := s.tracer.Start(parent, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attrs...), trace.WithLinks(links...))
		res, err := next(ctx, method, req)
		end(span, res, err)
		return res, err
	}
}

// sent is sending middleware: a CLIENT span for each request the server
// sends its client (an approval form, elicitation/create, while a
// tools/call waits), child of the span of the call it serves, with the
// trace context in its _meta for the client to continue. Notifications
// are left out: they are many, and answer nothing.
func (s *spanTracer) sent(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") {
			return next(ctx, method, req)
		}
		name, attrs := s.describe(method, req)
		ctx, span := s.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		if params := req.GetParams(); present(params) && span.IsRecording() {
			meta := params.GetMeta()
			if meta == nil {
				meta = map[string]any{}
			}
			tracePropagation.Inject(ctx, metaCarrier(meta))
			params.SetMeta(meta)
		}
		res, err := next(ctx, method, req)
		end(span, res, err)
		return res, err
	}
}

// parentOf is the context a handled message's span starts in, and the
// links it carries.
func (s *spanTracer) parentOf(ctx context.Context, req mcp.Request) (context.Context, []trace.Link) {
	var carried trace.SpanContext // the HTTP request's
	extra := req.GetExtra()
	overHTTP := extra != nil && extra.Header != nil
	if extra != nil && extra.TokenInfo != nil {
		carried, _ = extra.TokenInfo.Extra[extraSpanContext].(trace.SpanContext)
	}
	if params := req.GetParams(); present(params) {
		if meta := params.GetMeta(); meta != nil {
			if _, ok := meta["traceparent"]; ok {
				fromMeta := trace.SpanContextFromContext(tracePropagation.Extract(context.Background(), metaCarrier(meta)))
				if fromMeta.IsValid() {
					var links []trace.Link
					if carried.IsValid() {
						links = []trace.Link{{SpanContext: carried}}
					}
					return trace.ContextWithRemoteSpanContext(ctx, fromMeta), links
				}
			}
		}
	}
	if overHTTP {
		// The session's context is the HTTP request that began it, long
		// over: each message's span belongs to the request carrying it,
		// or begins a trace of its own.
		return trace.ContextWithSpanContext(ctx, carried), nil
	}
	return ctx, nil
}

// describe names a message's span and gives the attributes known before
// it is answered.
func (s *spanTracer) describe(method string, req mcp.Request) (string, []attribute.KeyValue) {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attribute.String("mcp.method.name", method))
	name := method
	session := req.GetSession()
	if ss, ok := session.(*mcp.ServerSession); ok {
		if id := ss.ID(); id != "" {
			attrs = append(attrs, attribute.String("mcp.session.id", id))
		}
		if p := ss.InitializeParams(); p != nil && p.ProtocolVersion != "" {
			attrs = append(attrs, attribute.String("mcp.protocol.version", p.ProtocolVersion))
		}
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		attrs = append(attrs, attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http"))
	}
	if method == "tools/call" {
		attrs = append(attrs, attribute.String("gen_ai.operation.name", "execute_tool"))
		if params, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && params != nil {
			if s.known(params.Name) {
				name = s.callName(params.Name)
				attrs = append(attrs, attribute.String("gen_ai.tool.name", params.Name))
			}
			if id, ok := requestIDOf(params.Meta); ok {
				attrs = append(attrs, attribute.String("jsonrpc.request.id", id))
			}
		}
	}
	return name, attrs
}

// callName is the span name of a call of the registered tool slug.
func (s *spanTracer) callName(slug string) string {
	if n, ok := s.callNames.Load(slug); ok {
		return n.(string)
	}
	n, _ := s.callNames.LoadOrStore(slug, "tools/call "+slug)
	return n.(string)
}

// end finishes a message's span with how it was answered: error.type is
// the JSON-RPC error code, _OTHER for an error without one, or tool_error
// for a tool result with isError. The status description is that type,
// never the message, which can quote what the caller sent.
func end(span trace.Span, res mcp.Result, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	errType := ""
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		errType = strconv.FormatInt(rpcErr.Code, 10)
		span.SetAttributes(attribute.String("rpc.response.status_code", errType))
	case err != nil:
		errType = "_OTHER"
	default:
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			errType = "tool_error"
		}
	}
	if errType != "" {
		span.SetAttributes(attribute.String("error.type", errType))
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}

// requestIDOf reads the JSON-RPC request id from the request key the
// transport set in a tools/call's _meta: the id's JSON after the session.
// A string id is given as it is, a number as it was written.
func requestIDOf(meta mcp.Meta) (string, bool) {
	key, ok := meta[metaRequestKey].(string)
	if !ok {
		return "", false
	}
	_, raw, ok := strings.Cut(key, " ")
	if !ok || raw == "" {
		return "", false
	}
	if raw[0] != '"' {
		return raw, true
	}
	var id string
	if json.Unmarshal([]byte(raw), &id) != nil {
		return "", false
	}
	return id, true
}

// present reports whether a request has params: a request without them
// holds a nil pointer of its params type.
func present(p mcp.Params) bool {
	if p == nil {
		return false
	}
	v := reflect.ValueOf(p)
	return v.Kind() != reflect.Pointer || !v.IsNil()
}

// metaCarrier reads and writes trace context entries of a _meta object.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
