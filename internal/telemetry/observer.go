package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/upstream"
)

// instrumentationName names the gateway's tracer.
const instrumentationName = "github.com/toolgate/toolgate"

// Observer turns what the gateway does into metrics, spans and one log
// line per finished call. With neither metrics nor a tracer it does no more
// than read the clock once per call: every other step checks a nil first.
//
// What it reports is chosen so that nothing a caller sends or a provider
// answers leaks: no input, output, key or credential is ever an attribute,
// a label or a log field. Metric labels are registered tools' slugs and
// fixed sets of words; spans also carry ids (execution, quote), the
// manifest digest and the amounts.
type Observer struct {
	metrics  *metrics     // nil: no metrics
	tracer   trace.Tracer // nil: no spans
	log      *slog.Logger
	registry *registry.Registry
	// Next is the operator's own upstream.Observer, told everything too.
	Next upstream.Observer
	// names holds each tool's span names (*spanNames by slug), made once.
	names sync.Map
}

// spanNames are the names of one tool's spans.
type spanNames struct{ call, quote string }

// spanNamesOf returns slug's span names.
func (o *Observer) spanNamesOf(slug string) *spanNames {
	if n, ok := o.names.Load(slug); ok {
		return n.(*spanNames)
	}
	n, _ := o.names.LoadOrStore(slug, &spanNames{call: "execute_tool " + slug, quote: "quote " + slug})
	return n.(*spanNames)
}

// Config is what an Observer reports to, and what it reads.
type Config struct {
	// Metrics registers the metrics; nil means none.
	Metrics prometheus.Registerer
	// Deadline is the upstream deadline, the last bucket of the duration
	// histograms.
	Deadline time.Duration
	// TracerProvider makes the spans; nil means none.
	TracerProvider trace.TracerProvider
	Logger         *slog.Logger
	// Registry names the tools that calls and quotes ask for.
	Registry *registry.Registry
}

// New returns the Observer of c, its metrics registered.
func New(c Config) (*Observer, error) {
	m, err := newMetrics(c.Metrics, c.Deadline)
	if err != nil {
		return nil, err
	}
	o := &Observer{metrics: m, log: c.Logger, registry: c.Registry}
	if c.TracerProvider != nil {
		o.tracer = c.TracerProvider.Tracer(instrumentationName)
	}
	return o, nil
}

// WatchesUpstream reports whether the upstream client should tell o about
// its requests.
func (o *Observer) WatchesUpstream() bool { return o.metrics != nil || o.tracer != nil }

// toolLabel is the label and span name part for a tool: its slug, or
// unknownTool when none is registered under what the caller sent.
func (o *Observer) toolLabel(v *registry.Version, requested string) string {
	if v != nil {
		return v.Tool.Slug
	}
	if v, err := o.registry.Lookup(requested); err == nil {
		return v.Tool.Slug
	}
	return unknownTool
}

// CallRecord is what one call reports once it is over, filled in as the
// pipeline learns it.
type CallRecord struct {
	obs       *Observer
	start     time.Time
	span      trace.Span // nil when not tracing
	principal string
	requested string            // the tool as the caller named it
	tool      *registry.Version // nil until resolved
	quote     storage.Quote     // once found for the call (hasQuote)
	hasQuote  bool
	approval  toolgatetype.ApprovalKind
	grantID   uuid.UUID // the approver's grant, when approval is one
	execution uuid.UUID // the execution, once there is one
	// ran: this call ran the tool and recorded its result (the one log
	// line is written for it); status and upstreamStatus are its outcome.
	ran            bool
	status         toolgatetype.Status
	errorCode      string
	upstreamStatus int // 0: no answer from the provider
	// rules are the organization's rules that took part in deciding the
	// call, for its log line (or its refusal's).
	rules []toolgatetype.RuleUse
}

// StartCall begins a call's record and, when tracing, its span, which the
// returned context carries to the upstream attempts.
func (o *Observer) StartCall(ctx context.Context, rec *CallRecord, principal, tool string) context.Context {
	*rec = CallRecord{obs: o, start: time.Now(), principal: principal, requested: tool}
	if o.tracer != nil {
		// Attributes are set once, at the end, when all are known: each
		// SetAttributes on a recording span grows its attribute slice.
		ctx, rec.span = o.tracer.Start(ctx, "execute_tool") // kind internal, the default
	}
	return ctx
}

// SetTool records the tool's version the call resolved to.
func (rec *CallRecord) SetTool(v *registry.Version) { rec.tool = v }

// SetQuote records the quote the call was made under.
func (rec *CallRecord) SetQuote(q storage.Quote) { rec.quote, rec.hasQuote = q, true }

// EndCall reports a call that is over: its metrics, its span and, for a
// call that ran, the log line.
func (o *Observer) EndCall(ctx context.Context, rec *CallRecord, res *toolgatetype.CallResult, err error) {
	outcome, code := outcomeOf(rec, res, err)
	elapsed := time.Since(rec.start)
	if o.metrics == nil && rec.span == nil && !rec.ran && len(rec.rules) == 0 {
		return // nothing to report: neither metrics nor a trace, and nothing ran
	}
	slug := o.toolLabel(rec.tool, rec.requested)
	if m := o.metrics; m != nil {
		series := m.tool(slug)
		series.calls[outcome].Inc()
		if rec.ran {
			series.callDuration.Observe(elapsed.Seconds())
		}
		if rec.ran && rec.status == toolgatetype.StatusCompleted && rec.hasQuote {
			series.charged.Add(rec.quote.TotalUSD)
		}
		// Labels from the configuration's budget ids and three windows:
		// no caller can add a series.
		var te *toolgatetype.Error
		if outcome == outcomeRefused && errors.As(err, &te) && te.Budget != nil {
			m.budgetRefusals.WithLabelValues(te.Budget.ID, string(te.Budget.Window)).Inc()
		}
	}
	if rec.span != nil {
		o.endCallSpan(rec, slug, outcome, code)
	}
	switch {
	case rec.ran && o.log.Enabled(ctx, slog.LevelInfo):
		o.logCall(ctx, rec, slug, elapsed)
	case err != nil && len(rec.rules) > 0 && o.log.Enabled(ctx, slog.LevelInfo):
		// A refusal makes no execution: its log line is its audit record.
		o.log.LogAttrs(ctx, slog.LevelInfo, "call refused",
			slog.String("principal", rec.principal), slog.String("tool", slug),
			slog.String("errorCode", code), rulesAttr(rec.rules))
	}
}

// SetRules notes the rules that took part in deciding the call.
func (r *CallRecord) SetRules(uses []toolgatetype.RuleUse) { r.rules = uses }

// rulesAttr is the rules of a call's log line.
func rulesAttr(uses []toolgatetype.RuleUse) slog.Attr {
	return slog.Any("rules", uses)
}

// outcomeOf names how a call ended, and the error code when it did not
// complete.
func outcomeOf(rec *CallRecord, res *toolgatetype.CallResult, err error) (outcome, code string) {
	switch {
	case err != nil:
		return outcomeRefused, string(codeOf(err))
	case res.Replayed:
		rec.execution, _ = uuid.Parse(res.Execution.ID)
		code := ""
		if res.Execution.Error != nil {
			code = res.Execution.Error.Code
		}
		return outcomeReplayed, code
	case res.Execution.Status == toolgatetype.StatusCompleted:
		return outcomeCompleted, ""
	}
	if res.Execution.Error != nil {
		code = res.Execution.Error.Code
	}
	if res.Execution.Status == toolgatetype.StatusAmbiguous {
		return outcomeAmbiguous, code
	}
	return outcomeFailed, code
}

// endCallSpan finishes the execute_tool span, named and attributed as the
// OpenTelemetry GenAI conventions ask, with toolgate's own beside them.
func (o *Observer) endCallSpan(rec *CallRecord, slug, outcome, code string) {
	span := rec.span
	if !span.IsRecording() {
		// Sampled out: nothing to describe.
		span.End()
		return
	}
	attrs := make([]attribute.KeyValue, 0, 11)
	attrs = append(attrs,
		attribute.String("gen_ai.operation.name", "execute_tool"),
		// The gateway calls an external API on the agent's behalf.
		attribute.String("gen_ai.tool.type", "extension"),
		attribute.String("toolgate.call.outcome", outcome),
	)
	if slug != unknownTool {
		span.SetName(o.spanNamesOf(slug).call)
		attrs = append(attrs, attribute.String("gen_ai.tool.name", slug))
	}
	if rec.execution != uuid.Nil {
		attrs = append(attrs, attribute.String("gen_ai.tool.call.id", rec.execution.String()))
	}
	if rec.hasQuote {
		q := &rec.quote
		attrs = append(attrs,
			attribute.String("toolgate.quote.id", q.ID.String()),
			attribute.String("toolgate.manifest_digest", q.ManifestDigest),
			attribute.String("toolgate.cost.total_usd", toolgatetype.FormatUSD(q.TotalUSD)),
		)
	}
	if rec.approval != "" {
		attrs = append(attrs, attribute.String("toolgate.approval.kind", string(rec.approval)))
	}
	if rec.upstreamStatus > 0 {
		attrs = append(attrs, attribute.Int("toolgate.upstream.status_code", rec.upstreamStatus))
	}
	if code != "" && outcome != outcomeCompleted {
		attrs = append(attrs, attribute.String("error.type", code))
		span.SetStatus(codes.Error, code)
	}
	span.SetAttributes(attrs...)
	span.End()
}

// logCall writes the one line a finished call leaves in the log: who called
// which tool version, what became of it and what it cost, how it was
// approved, how long it took and what the provider answered. Never the
// input, the output or a key.
func (o *Observer) logCall(ctx context.Context, rec *CallRecord, slug string, elapsed time.Duration) {
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("execution", rec.execution.String()),
		slog.String("principal", rec.principal),
		slog.String("tool", slug),
	)
	if rec.hasQuote {
		q := &rec.quote
		attrs = append(attrs,
			slog.String("manifestDigest", q.ManifestDigest),
			slog.Group("cost", slog.String("priceUsd", toolgatetype.FormatUSD(q.PriceUSD)), slog.String("feeUsd", toolgatetype.FormatUSD(q.FeeUSD)), slog.String("totalUsd", toolgatetype.FormatUSD(q.TotalUSD))),
		)
	}
	// Not "status": the server's request lines use that for the HTTP
	// status, a number, and one name with two types breaks log indexes.
	attrs = append(attrs, slog.String("executionStatus", string(rec.status)))
	if rec.errorCode != "" {
		attrs = append(attrs, slog.String("errorCode", rec.errorCode))
	}
	approval := []any{slog.String("kind", string(rec.approval))}
	if rec.grantID != uuid.Nil {
		approval = append(approval, slog.String("grantId", rec.grantID.String()))
	}
	attrs = append(attrs, slog.Group("approval", approval...))
	attrs = append(attrs, slog.Float64("durationMs", float64(elapsed.Microseconds())/1000))
	if len(rec.rules) > 0 {
		attrs = append(attrs, rulesAttr(rec.rules))
	}
	if rec.upstreamStatus > 0 {
		attrs = append(attrs, slog.Int("upstreamStatus", rec.upstreamStatus))
	}
	if rec.status == toolgatetype.StatusAmbiguous {
		// Someone has to find out what the provider did, and resolve it.
		o.log.LogAttrs(ctx, slog.LevelWarn, "call finished with an unknown outcome", attrs...)
		return
	}
	o.log.LogAttrs(ctx, slog.LevelInfo, "call finished", attrs...)
}

// QuoteRecord is what one quote reports once it is over.
type QuoteRecord struct {
	start     time.Time // zero when not tracing
	requested string
	// Tool is the version quoted; nil: to be looked up from the result.
	Tool *registry.Version
}

// StartQuote notes when a quote began, when tracing.
func (o *Observer) StartQuote(tool string) QuoteRecord {
	rec := QuoteRecord{requested: tool}
	if o.tracer != nil {
		rec.start = time.Now()
	}
	return rec
}

// EndQuote reports a quote: its count, by tool, and its span. The span has
// no children, so it is made here, with its start time, and all its
// attributes at once.
func (o *Observer) EndQuote(ctx context.Context, rec QuoteRecord, res *toolgatetype.QuoteResult, err error) {
	if o.metrics == nil && o.tracer == nil {
		return
	}
	v := rec.Tool
	if v == nil && res != nil {
		v, _ = o.registry.Lookup(res.Tool.ID)
	}
	slug := o.toolLabel(v, rec.requested)
	if m := o.metrics; m != nil {
		m.tool(slug).quotes.Inc()
	}
	if o.tracer == nil {
		return
	}
	name := "quote"
	attrs := make([]attribute.KeyValue, 0, 7)
	if slug != unknownTool {
		name = o.spanNamesOf(slug).quote
		attrs = append(attrs, attribute.String("gen_ai.tool.name", slug))
	}
	if res != nil {
		attrs = append(attrs,
			attribute.String("toolgate.quote.id", res.Quote.ID),
			attribute.String("toolgate.cost.total_usd", res.Quote.TotalUSD),
			attribute.String("toolgate.policy.requirement", string(res.Policy.Approval.Requirement)),
			attribute.Bool("toolgate.controls.approved", res.Controls.Approved),
		)
		if d := res.Quote.ManifestDigest; d != nil {
			attrs = append(attrs, attribute.String("toolgate.manifest_digest", *d))
		}
	}
	var code string
	if err != nil {
		code = string(codeOf(err))
		attrs = append(attrs, attribute.String("error.type", code))
	}
	_, span := o.tracer.Start(ctx, name, trace.WithTimestamp(rec.start), trace.WithAttributes(attrs...))
	if err != nil {
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// Attempt implements upstream.Observer: each attempt is counted by its
// result and, when tracing, is a client span under the call's, made once
// the attempt is over (it has no children) with all its attributes at
// once. The span names the destination's host and port, never its path or
// query, which may carry the tool's input.
func (o *Observer) Attempt(req *http.Request, v *registry.Version, n int) func(upstream.AttemptOutcome) {
	// The call's span is the parent: when it was sampled out, so is this.
	traced := o.tracer != nil && trace.SpanFromContext(req.Context()).IsRecording()
	var start time.Time
	if traced {
		start = time.Now()
	}
	var next func(upstream.AttemptOutcome)
	if o.Next != nil {
		next = o.Next.Attempt(req, v, n)
	}
	return func(out upstream.AttemptOutcome) {
		if o.metrics != nil {
			o.metrics.tool(v.Tool.Slug).attempts[out.Result].Inc()
		}
		if traced {
			o.attemptSpan(req, v, n, out, start)
		}
		if next != nil {
			next(out)
		}
	}
}

// attemptSpan records one attempt as an HTTP client span.
func (o *Observer) attemptSpan(req *http.Request, v *registry.Version, n int, out upstream.AttemptOutcome, start time.Time) {
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs,
		attribute.String("http.request.method", req.Method),
		attribute.String("url.scheme", req.URL.Scheme),
		attribute.String("server.address", req.URL.Hostname()),
		attribute.String("gen_ai.tool.name", v.Tool.Slug),
	)
	if port := portOf(req); port > 0 {
		attrs = append(attrs, attribute.Int("server.port", port))
	}
	if n > 0 {
		attrs = append(attrs, attribute.Int("http.request.resend_count", n))
	}
	if out.StatusCode > 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", out.StatusCode))
	}
	failed := out.Result != upstream.AttemptOK
	if failed {
		errType := string(out.Result)
		if out.StatusCode > 0 {
			errType = strconv.Itoa(out.StatusCode)
		}
		attrs = append(attrs, attribute.String("error.type", errType))
	}
	_, span := o.tracer.Start(req.Context(), req.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if failed {
		span.SetStatus(codes.Error, string(out.Result))
	}
	span.End()
}

// Finished implements upstream.Observer.
func (o *Observer) Finished(ctx context.Context, v *registry.Version, d time.Duration) {
	if o.metrics != nil {
		o.metrics.tool(v.Tool.Slug).upstreamDuration.Observe(d.Seconds())
	}
	if o.Next != nil {
		o.Next.Finished(ctx, v, d)
	}
}

// Circuit implements upstream.Observer.
func (o *Observer) Circuit(v *registry.Version, open bool) {
	if o.metrics != nil {
		value := 0.0
		if open {
			value = 1
		}
		o.metrics.tool(v.Tool.Slug).circuitOpen.Set(value)
	}
	if o.Next != nil {
		o.Next.Circuit(v, open)
	}
}

// portOf is the port a request goes to, said or implied by its scheme.
func portOf(req *http.Request) int {
	if p := req.URL.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		return n
	}
	switch req.URL.Scheme {
	case "https":
		return 443
	case "http":
		return 80
	}
	return 0
}

// codeOf is err's code; an error that is not a *toolgatetype.Error is
// internal.
func codeOf(err error) toolgatetype.Code {
	var te *toolgatetype.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return toolgatetype.CodeInternal
}

// What becomes of approval requests, the values of
// toolgate_approval_requests_total's decision label.
const (
	ApprovalCreated  = "created"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalUsed     = "used" // a call consumed the grant
	// ApprovalLimited: refused, its principal having asked too often.
	ApprovalLimited = "limited"
	// ApprovalSame: the same request was pending, and answered instead.
	ApprovalSame = "same_pending"
)

// ApprovalRequest counts an approval request by what became of it.
func (o *Observer) ApprovalRequest(decision string) {
	if o.metrics != nil {
		o.metrics.approvalRequests.WithLabelValues(decision).Inc()
	}
}

// CallHooks are the executor's hooks that report its call into rec: they
// begin the call's record and span, note what the executor learns of it,
// and at its end count it, end the span and write the log line (EndCall).
func (o *Observer) CallHooks(rec *CallRecord) executor.Hooks {
	rec.obs = o
	return executor.Hooks{Begin: rec.begin, Claimed: rec.claimed, Ran: rec.recorded, Finished: rec.finished}
}

// begin starts rec's call as StartCall does, on the tool it runs.
func (rec *CallRecord) begin(ctx context.Context, c *executor.Call) context.Context {
	ctx = rec.obs.StartCall(ctx, rec, c.Key.Principal, c.Run.Tool.Tool.Slug)
	rec.SetTool(c.Run.Tool)
	return ctx
}

// claimed notes the execution the store admitted. A takeover runs the
// original execution, approved as it was.
func (rec *CallRecord) claimed(ctx context.Context, _ *executor.Call, begun storage.BeginResult) {
	e := begun.Execution
	if e.GrantID != uuid.Nil && !begun.TookOver {
		rec.obs.ApprovalRequest(ApprovalUsed)
	}
	rec.execution, rec.approval, rec.grantID = e.ID, e.Approval, e.GrantID
	if begun.TookOver {
		rec.obs.log.InfoContext(ctx, "took over an abandoned call", "execution", e.ID, "tool", rec.tool.Tool.Slug)
	}
}

// recorded notes that the call ran, which is logged.
func (rec *CallRecord) recorded(_ context.Context, _ *executor.Call, _ executor.Claim, r *executor.Record) {
	rec.ran, rec.status, rec.upstreamStatus, rec.errorCode = true, r.Status, r.UpstreamStatus, r.ErrorCode
}

// finished reports the call that is over (EndCall).
func (rec *CallRecord) finished(ctx context.Context, _ *executor.Call, res *toolgatetype.CallResult, err error) {
	rec.obs.EndCall(ctx, rec, res, err)
}
