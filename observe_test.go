package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/upstream"
)

// Distinctive values that must never reach a metric, a span or a log line.
const (
	secretInput     = "needle-input-6f1c"
	secretPrincipal = "principal-7d2e"
)

// paidEcho is the echo tool at $0.10 a call, verified and paid for, and of
// low risk: its policy asks for no approval (covered_by_user_policy).
func paidEcho() *registry.Tool {
	t := toolgatetest.Priced(toolgatetest.EchoTool(), "0.1000")
	t.Slug, t.Name = "paid-echo", "Paid Echo"
	return t
}

// observed is a test gateway with metrics, traces and a JSON log.
type observed struct {
	*toolgatetest.Gateway
	reg   *prometheus.Registry
	spans *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider
	log   *testproc.SyncBuffer
}

func newObserved(t *testing.T) *observed {
	t.Helper()
	o := &observed{reg: prometheus.NewRegistry(), spans: tracetest.NewInMemoryExporter(), log: &testproc.SyncBuffer{}}
	o.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(o.spans))
	o.Gateway = toolgatetest.New(t, &toolgatetest.Options{
		Tools: []*registry.Tool{toolgatetest.EchoTool(), paidEcho()},
		Config: &toolgate.Config{
			Metrics:        o.reg,
			TracerProvider: o.tp,
			Logger:         slog.New(slog.NewJSONHandler(o.log, nil)),
			// Retries without waiting; the breaker opens at the first failure.
			Upstream: &upstream.Config{
				Attempts:         2,
				Backoff:          func(time.Duration, time.Duration, int, *http.Response) time.Duration { return 0 },
				BreakerThreshold: 1,
			},
		},
	})
	return o
}

// call quotes tool and calls it with input under key, approving the digest
// when approve is set.
func (o *observed) call(t *testing.T, ctx context.Context, tool, input, key string, approve bool) (*toolgatetype.CallResult, error) {
	t.Helper()
	q, err := o.Quote(ctx, secretPrincipal, tool)
	require.NoError(t, err)
	req := toolgatetype.CallRequest{Tool: tool, QuoteID: q.Quote.ID, Input: json.RawMessage(input), IdempotencyKey: key}
	if approve {
		req.ApprovalDigest = *q.Quote.ManifestDigest
	}
	return o.Call(ctx, secretPrincipal, req)
}

// gathered is the value of one series (a histogram's sample count), found
// by its label pairs; 0 when it has no sample yet.
func gathered(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	want := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		want[pairs[i]] = pairs[i+1]
	}
	got := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			got++
		}
	}
	return got == len(want)
}

// TestMetricsAfterKnownCalls runs a known sequence of calls and reads every
// metric it must have moved.
func TestMetricsAfterKnownCalls(t *testing.T) {
	t.Parallel()
	o := newObserved(t)
	ctx := context.Background()

	// Two completed paid calls, approved by the caller's policy: $0.22 charged.
	for i := range 2 {
		res, err := o.call(t, ctx, "paid-echo", `{"v":"`+secretInput+`"}`, fmt.Sprintf("paid-%d", i), false)
		toolgatetest.RequireCompleted(t, res, err, "0.1100")
	}
	// A completed free call, then its retry: replayed.
	q, err := o.Quote(ctx, secretPrincipal, "echo")
	require.NoError(t, err)
	req := toolgatetype.CallRequest{Tool: "echo", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`), ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: "free-1"}
	res, err := o.Call(ctx, secretPrincipal, req)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	res, err = o.Call(ctx, secretPrincipal, req)
	require.NoError(t, err)
	require.True(t, res.Replayed)
	// A failed call: the answer is longer than the output schema allows.
	res, err = o.call(t, ctx, "echo", `{"v":"far more than twenty characters"}`, "failed-1", true)
	toolgatetest.RequireFailed(t, res, err, registry.CodeOutputInvalid)
	// Refused: no approval, and a tool that does not exist.
	_, err = o.call(t, ctx, "echo", `{"v":"hi"}`, "refused-1", false)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequired)
	_, err = o.Call(ctx, secretPrincipal, toolgatetype.CallRequest{Tool: "no-such-tool", QuoteID: q.Quote.ID, Input: json.RawMessage(`{}`), IdempotencyKey: "refused-2"})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeToolNotFound)
	_, err = o.Quote(ctx, secretPrincipal, "Not A Tool "+secretInput)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeToolNotFound)

	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"toolgate_calls_total", []string{"tool", "paid-echo", "outcome", "completed"}, 2},
		{"toolgate_calls_total", []string{"tool", "echo", "outcome", "completed"}, 1},
		{"toolgate_calls_total", []string{"tool", "echo", "outcome", "replayed"}, 1},
		{"toolgate_calls_total", []string{"tool", "echo", "outcome", "failed"}, 1},
		{"toolgate_calls_total", []string{"tool", "echo", "outcome", "refused"}, 1},
		{"toolgate_calls_total", []string{"tool", "_unknown", "outcome", "refused"}, 1},
		{"toolgate_quotes_total", []string{"tool", "paid-echo"}, 2},
		{"toolgate_quotes_total", []string{"tool", "echo"}, 3},
		{"toolgate_quotes_total", []string{"tool", "_unknown"}, 1},
		{"toolgate_charged_usd_total", []string{"tool", "paid-echo"}, 0.22},
		{"toolgate_charged_usd_total", []string{"tool", "echo"}, 0},
		{"toolgate_call_duration_seconds", []string{"tool", "echo"}, 2}, // the completed and the failed call
		{"toolgate_call_duration_seconds", []string{"tool", "paid-echo"}, 2},
		{"toolgate_upstream_duration_seconds", []string{"tool", "echo"}, 2},
		{"toolgate_upstream_attempts_total", []string{"tool", "echo", "result", "ok"}, 2},
		{"toolgate_upstream_attempts_total", []string{"tool", "paid-echo", "result", "ok"}, 2},
		{"toolgate_circuit_open", []string{"tool", "echo"}, 0},
	} {
		assert.InDelta(t, c.want, gathered(t, o.reg, c.name, c.labels...), 1e-9, "%s %v", c.name, c.labels)
	}
	assert.Equal(t, 3, testutil.CollectAndCount(o.reg, "toolgate_quotes_total"), "paid-echo, echo and _unknown")
	assertNoCallerStrings(t, o.reg, secretInput, secretPrincipal, q.Quote.ID, res.Execution.ID, "no-such-tool", "free-1")
}

// assertNoCallerStrings checks that no label of any metric holds any of
// values: nothing a caller sends becomes a series.
func assertNoCallerStrings(t *testing.T, reg *prometheus.Registry, values ...string) {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				for _, v := range values {
					assert.NotContains(t, l.GetValue(), v, "%s{%s}", f.GetName(), l.GetName())
				}
			}
		}
	}
}

// TestMetricsOfAFailingProvider: attempts by result, the breaker opening
// and closing again.
func TestMetricsOfAFailingProvider(t *testing.T) {
	t.Parallel()
	o := newObserved(t)
	ctx := context.Background()
	healthy := o.Upstream.Handler()
	// A 503 with no body is the provider's failure, whoever met it: it
	// opens the circuit for everyone (one with a body would hold back only
	// the caller who met it).
	o.Upstream.Handle(toolgatetest.Reply(http.StatusServiceUnavailable, ``))

	res, err := o.call(t, ctx, "echo", `{"v":"hi"}`, "down-1", true)
	toolgatetest.RequireFailed(t, res, err, registry.CodeUpstreamError)
	assert.Equal(t, 2.0, gathered(t, o.reg, "toolgate_upstream_attempts_total", "tool", "echo", "result", "server_error"), "a GET is tried twice")
	assert.Equal(t, 1.0, gathered(t, o.reg, "toolgate_circuit_open", "tool", "echo"))

	// The breaker fails the next call fast: no attempt is made.
	res, err = o.call(t, ctx, "echo", `{"v":"hi"}`, "down-2", true)
	toolgatetest.RequireFailed(t, res, err, registry.CodeUpstreamUnavailable)
	assert.Equal(t, 2.0, gathered(t, o.reg, "toolgate_upstream_attempts_total", "tool", "echo", "result", "server_error"))
	assert.Equal(t, 1.0, gathered(t, o.reg, "toolgate_upstream_duration_seconds", "tool", "echo"), "only the request that was sent is timed")
	assert.Equal(t, 2.0, gathered(t, o.reg, "toolgate_calls_total", "tool", "echo", "outcome", "failed"))

	// After the cool-down, a success closes it.
	o.Upstream.Handle(healthy)
	o.Clock.Advance(upstream.DefaultBreakerCooldown + time.Second)
	res, err = o.call(t, ctx, "echo", `{"v":"hi"}`, "up-1", true)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	assert.Equal(t, 0.0, gathered(t, o.reg, "toolgate_circuit_open", "tool", "echo"))
	assert.Equal(t, 1.0, gathered(t, o.reg, "toolgate_upstream_attempts_total", "tool", "echo", "result", "ok"))
}

// TestGatewaysShareARegistry: a second gateway on the same registerer
// reports into the same series rather than failing to start.
func TestGatewaysShareARegistry(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := toolgatetest.New(t, &toolgatetest.Options{Config: &toolgate.Config{Metrics: reg}})
	b := toolgatetest.New(t, &toolgatetest.Options{Config: &toolgate.Config{Metrics: reg}})
	a.MustQuote(t, "alice", "echo")
	b.MustQuote(t, "bob", "echo")
	assert.Equal(t, 2.0, gathered(t, reg, "toolgate_quotes_total", "tool", "echo"))
}

// spanNamed returns the one ended span named name.
func spanNamed(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q among %v", name, spanNames(spans))
	return found[0]
}

func spanNames(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

func attrs(s tracetest.SpanStub) map[string]attribute.Value {
	out := map[string]attribute.Value{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

// TestTracesOfACall: a quote and a call made inside an agent's span are
// its children, the call is an execute_tool span with the GenAI attributes,
// and the provider request a client span under it. No input value, and no
// principal, appears anywhere in any span.
func TestTracesOfACall(t *testing.T) {
	t.Parallel()
	o := newObserved(t)
	ctx, agent := o.tp.Tracer("agent").Start(context.Background(), "agent step")
	res, err := o.call(t, ctx, "echo", `{"v":"`+secretInput+`"}`, "traced-1", true)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	agent.End()

	spans := o.spans.GetSpans()
	root := spanNamed(t, spans, "agent step")
	quote := spanNamed(t, spans, "quote echo")
	call := spanNamed(t, spans, "execute_tool echo")
	get := spanNamed(t, spans, "GET")

	assert.Equal(t, root.SpanContext.SpanID(), quote.Parent.SpanID())
	assert.Equal(t, root.SpanContext.SpanID(), call.Parent.SpanID())
	assert.Equal(t, call.SpanContext.SpanID(), get.Parent.SpanID(), "the provider request is a child of the call")
	assert.Equal(t, root.SpanContext.TraceID(), get.SpanContext.TraceID())

	assert.Equal(t, trace.SpanKindInternal, call.SpanKind)
	a := attrs(call)
	assert.Equal(t, "execute_tool", a["gen_ai.operation.name"].AsString())
	assert.Equal(t, "echo", a["gen_ai.tool.name"].AsString())
	assert.Equal(t, "extension", a["gen_ai.tool.type"].AsString())
	assert.Equal(t, res.Execution.ID, a["gen_ai.tool.call.id"].AsString())
	assert.NotEmpty(t, a["toolgate.quote.id"].AsString())
	assert.Equal(t, a["toolgate.quote.id"].AsString(), attrs(quote)["toolgate.quote.id"].AsString())
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, a["toolgate.manifest_digest"].AsString())
	assert.Equal(t, "0.0000", a["toolgate.cost.total_usd"].AsString())
	assert.Equal(t, "completed", a["toolgate.call.outcome"].AsString())
	assert.Equal(t, "digest", a["toolgate.approval.kind"].AsString())
	assert.NotContains(t, a, "error.type")
	assert.Equal(t, codes.Unset, call.Status.Code)

	assert.Equal(t, trace.SpanKindClient, get.SpanKind)
	g := attrs(get)
	assert.Equal(t, "GET", g["http.request.method"].AsString())
	assert.Equal(t, "echo.example.test", g["server.address"].AsString())
	assert.EqualValues(t, 443, g["server.port"].AsInt64())
	assert.EqualValues(t, 200, g["http.response.status_code"].AsInt64())

	assertNothingSecretInSpans(t, spans, secretInput, secretPrincipal)
}

// assertNothingSecretInSpans checks names, attributes and events of every span.
func assertNothingSecretInSpans(t *testing.T, spans tracetest.SpanStubs, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		texts := []string{s.Name, s.Status.Description}
		for _, kv := range s.Attributes {
			texts = append(texts, string(kv.Key), kv.Value.Emit())
		}
		for _, e := range s.Events {
			texts = append(texts, e.Name)
			for _, kv := range e.Attributes {
				texts = append(texts, kv.Value.Emit())
			}
		}
		for _, text := range texts {
			for _, secret := range secrets {
				assert.NotContains(t, text, secret, "span %q", s.Name)
			}
		}
	}
}

// TestTracesOfFailuresAndRetries: a failed call and a refused one carry
// error.type; each attempt of a retried request is a client span of its own.
func TestTracesOfFailuresAndRetries(t *testing.T) {
	t.Parallel()
	o := newObserved(t)
	ctx := context.Background()

	res, err := o.call(t, ctx, "echo", `{"v":"far more than twenty characters"}`, "failed-1", true)
	toolgatetest.RequireFailed(t, res, err, registry.CodeOutputInvalid)
	failed := spanNamed(t, o.spans.GetSpans(), "execute_tool echo")
	assert.Equal(t, "output_invalid", attrs(failed)["error.type"].AsString())
	assert.Equal(t, "failed", attrs(failed)["toolgate.call.outcome"].AsString())
	assert.Equal(t, codes.Error, failed.Status.Code)
	o.spans.Reset()

	_, err = o.call(t, ctx, "echo", `{"v":"`+secretInput+`"}`, "refused-1", false)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequired)
	refused := spanNamed(t, o.spans.GetSpans(), "execute_tool echo")
	assert.Equal(t, "approval_required", attrs(refused)["error.type"].AsString())
	assert.Equal(t, "refused", attrs(refused)["toolgate.call.outcome"].AsString())
	assert.NotContains(t, attrs(refused), "gen_ai.tool.call.id", "no execution was made")
	o.spans.Reset()

	o.Upstream.Handle(toolgatetest.Reply(http.StatusServiceUnavailable, `{}`))
	res, err = o.call(t, ctx, "echo", `{"v":"`+secretInput+`"}`, "retried-1", true)
	toolgatetest.RequireFailed(t, res, err, registry.CodeUpstreamError)
	spans := o.spans.GetSpans()
	call := spanNamed(t, spans, "execute_tool echo")
	var attempts []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "GET" {
			attempts = append(attempts, s)
		}
	}
	require.Len(t, attempts, 2)
	for i, s := range attempts {
		assert.Equal(t, call.SpanContext.SpanID(), s.Parent.SpanID())
		assert.Equal(t, "503", attrs(s)["error.type"].AsString())
		assert.Equal(t, codes.Error, s.Status.Code)
		if i == 1 {
			assert.EqualValues(t, 1, attrs(s)["http.request.resend_count"].AsInt64())
		}
	}
	assert.EqualValues(t, 503, attrs(call)["toolgate.upstream.status_code"].AsInt64())
	o.spans.Reset()

	_, err = o.Call(ctx, secretPrincipal, toolgatetype.CallRequest{Tool: secretInput, QuoteID: "x", IdempotencyKey: "unknown-1"})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeToolNotFound)
	unknown := spanNamed(t, o.spans.GetSpans(), "execute_tool")
	assert.NotContains(t, attrs(unknown), "gen_ai.tool.name", "a name the caller made up is not a tool's")
	assertNothingSecretInSpans(t, o.spans.GetSpans(), secretInput, secretPrincipal)
}

// callLines returns the "call finished" lines of a JSON log.
func callLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m["msg"] == "call finished" {
			out = append(out, m)
		}
	}
	return out
}

// TestLogLinePerFinishedCall: a call that ran writes one line with the
// fields the audit needs; a replay and a refusal write none; no input and
// no key is in the log.
func TestLogLinePerFinishedCall(t *testing.T) {
	t.Parallel()
	o := newObserved(t)
	ctx := context.Background()
	paid, err := o.call(t, ctx, "paid-echo", `{"v":"`+secretInput+`"}`, "key-"+secretInput, false)
	toolgatetest.RequireCompleted(t, paid, err, "0.1100")
	failed, err := o.call(t, ctx, "echo", `{"v":"far more than twenty characters"}`, "failed-1", true)
	toolgatetest.RequireFailed(t, failed, err, registry.CodeOutputInvalid)
	_, err = o.call(t, ctx, "echo", `{"v":"hi"}`, "refused-1", false)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequired)

	lines := callLines(t, o.log.String())
	require.Len(t, lines, 2, "%s", o.log)
	v, err := o.Registry.Lookup("paid-echo")
	require.NoError(t, err)
	digest := v.Digest
	first := lines[0]
	assert.Equal(t, "INFO", first["level"])
	assert.Equal(t, paid.Execution.ID, first["execution"])
	assert.Equal(t, secretPrincipal, first["principal"])
	assert.Equal(t, "paid-echo", first["tool"])
	assert.Equal(t, digest, first["manifestDigest"])
	assert.Equal(t, "completed", first["executionStatus"])
	assert.Equal(t, map[string]any{"priceUsd": "0.1000", "feeUsd": "0.0100", "totalUsd": "0.1100"}, first["cost"])
	assert.Equal(t, map[string]any{"kind": "standing"}, first["approval"])
	assert.EqualValues(t, 200, first["upstreamStatus"])
	assert.GreaterOrEqual(t, first["durationMs"], 0.0)
	assert.NotContains(t, first, "errorCode")

	second := lines[1]
	assert.Equal(t, failed.Execution.ID, second["execution"])
	assert.Equal(t, "failed", second["executionStatus"])
	assert.Equal(t, "output_invalid", second["errorCode"])
	assert.Equal(t, map[string]any{"kind": "digest"}, second["approval"])

	assert.NotContains(t, o.log.String(), secretInput, "neither the input nor the Idempotency-Key is logged")
}

// TestMetricsOfApprovalRequests: requests are counted as they are made,
// decided and used by their call; the call shows the grant in its span.
func TestMetricsOfApprovalRequests(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	spans := tracetest.NewInMemoryExporter()
	g := toolgatetest.New(t, &toolgatetest.Options{Config: &toolgate.Config{
		Metrics:        reg,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
		Approvers: toolgatetype.StaticApprovers{
			Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
			Approvers: map[string][]string{"pat": {"agent"}},
		},
	}})
	ctx := context.Background()
	ask := func() (*toolgatetype.QuoteResult, *toolgatetype.ApprovalRequest) {
		q := g.MustQuote(t, "agent", "echo")
		r, err := g.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)})
		require.NoError(t, err)
		return q, r
	}
	q, granted := ask()
	_, err := g.DecideApproval(ctx, "pat", granted.ID, toolgatetype.Decision{Approve: true})
	require.NoError(t, err)
	_, denied := ask()
	_, err = g.DecideApproval(ctx, "pat", denied.ID, toolgatetype.Decision{Approve: false})
	require.NoError(t, err)
	res, err := g.Call(ctx, "agent", toolgatetype.CallRequest{
		Tool: "echo", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`), IdempotencyKey: "granted-1",
		ApprovalDigest: *q.Quote.ManifestDigest, ApprovalGrant: granted.ID,
	})
	toolgatetest.RequireCompleted(t, res, err, "0.0000")

	for decision, want := range map[string]float64{"created": 2, "approved": 1, "denied": 1, "used": 1} {
		assert.Equal(t, want, gathered(t, reg, "toolgate_approval_requests_total", "decision", decision), decision)
	}
	call := spanNamed(t, spans.GetSpans(), "execute_tool echo")
	assert.Equal(t, "grant", attrs(call)["toolgate.approval.kind"].AsString())
}

// TestChargedMetricIsExact: 55 charges of $0.1000 read exactly 5.5 in
// toolgate_charged_usd_total, as the spend does, not the 5.499999999999999
// that adding floats gives.
func TestChargedMetricIsExact(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	noFee := decimal.Zero
	g := toolgatetest.New(t, &toolgatetest.Options{
		Tools:  []*registry.Tool{paidEcho()},
		Config: &toolgate.Config{Metrics: reg, FeeRate: &noFee},
	})
	ctx := context.Background()
	for i := range 55 {
		q, err := g.Quote(ctx, secretPrincipal, "paid-echo")
		require.NoError(t, err)
		res, err := g.Call(ctx, secretPrincipal, toolgatetype.CallRequest{Tool: "paid-echo", QuoteID: q.Quote.ID,
			Input: json.RawMessage(`{"v":"hi"}`), IdempotencyKey: fmt.Sprintf("tenth-%d", i)})
		toolgatetest.RequireCompleted(t, res, err, "0.1000")
	}
	assert.Equal(t, 5.5, gathered(t, reg, "toolgate_charged_usd_total", "tool", "paid-echo"))
}
