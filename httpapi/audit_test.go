package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolgate/toolgate"
)

// callOnce quotes and calls earthquake-search for key, approving its digest.
func (a *api) callOnce(key, idemKey string) string {
	a.t.Helper()
	q := a.quote(key, "earthquake-search")
	r := a.call(key, "earthquake-search", idemKey, callBody(q, quakeInput))
	require.Equal(a.t, http.StatusOK, r.status, "%s", r.body)
	return r.header.Get("Toolgate-Execution-Id")
}

func TestListExecutionsOverHTTP(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	var ids []string
	for _, k := range []string{"k1", "k2", "k3"} {
		a.clock.Advance(1e9)
		ids = append([]string{a.callOnce(aliceKey, k)}, ids...)
	}
	a.callOnce(bobKey, "b1")

	r := a.do("GET", "/v1/executions?limit=2", aliceKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	page := r.json(t)
	items := page["executions"].([]any)
	require.Len(t, items, 2)
	first := items[0].(map[string]any)
	assert.Equal(t, ids[0], first["id"])
	assert.Equal(t, "alice", first["principal"])
	assert.Equal(t, "earthquake-search", first["tool"].(map[string]any)["slug"])
	assert.Regexp(t, `^sha256:`, first["manifestDigest"])
	assert.Equal(t, "completed", first["status"])
	assert.Equal(t, map[string]any{"priceUsd": "0.0000", "feeUsd": "0.0000", "totalUsd": "0.0000", "currency": "USD"}, first["cost"])
	assert.Equal(t, map[string]any{"kind": "digest"}, first["approval"])
	assert.NotEmpty(t, first["createdAt"])
	assert.NotEmpty(t, first["finishedAt"])
	assert.NotContains(t, first, "output")

	cursor := page["nextCursor"].(string)
	r = a.do("GET", "/v1/executions?limit=2&cursor="+url.QueryEscape(cursor), aliceKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	page = r.json(t)
	items = page["executions"].([]any)
	require.Len(t, items, 1)
	assert.Equal(t, ids[2], items[0].(map[string]any)["id"])
	assert.Nil(t, page["nextCursor"])
	assert.Contains(t, string(r.body), `"nextCursor":null`)

	r = a.do("GET", "/v1/executions?status=failed&tool=earthquake-search", aliceKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, []any{}, r.json(t)["executions"], "an empty page is an empty list")

	assert.Equal(t, http.StatusUnauthorized, a.do("GET", "/v1/executions", "", "").status)
}

// TestAuditRefusesBadQueries: 400 invalid_request naming the parameter.
func TestAuditRefusesBadQueries(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	a.callOnce(aliceKey, "k1")
	a.clock.Advance(1e9)
	a.callOnce(aliceKey, "k2")
	r := a.do("GET", "/v1/executions?limit=1", aliceKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	aliceCursor := r.json(t)["nextCursor"].(string)
	swap := "A"
	if aliceCursor[10] == 'A' {
		swap = "B"
	}
	tampered := aliceCursor[:10] + swap + aliceCursor[11:]

	cases := []struct {
		name, key, path, param string
	}{
		{"status", aliceKey, "/v1/executions?status=nope", "status"},
		{"since not RFC 3339", aliceKey, "/v1/executions?since=yesterday", "since"},
		{"until not RFC 3339", aliceKey, "/v1/executions?until=2030-03-15", "until"},
		{"limit 0", aliceKey, "/v1/executions?limit=0", "limit"},
		{"limit over 100", aliceKey, "/v1/executions?limit=101", "limit"},
		{"limit not a number", aliceKey, "/v1/executions?limit=ten", "limit"},
		{"tampered cursor", aliceKey, "/v1/executions?cursor=" + url.QueryEscape(tampered), "cursor"},
		{"another caller's cursor", bobKey, "/v1/executions?limit=1&cursor=" + url.QueryEscape(aliceCursor), "cursor"},
		{"a parameter twice", aliceKey, "/v1/executions?status=failed&status=completed", "status"},
		{"spend groupBy", aliceKey, "/v1/spend?groupBy=week", "groupBy"},
		{"spend empty groupBy", aliceKey, "/v1/spend?groupBy=", "groupBy"},
		{"spend since", aliceKey, "/v1/spend?since=last-month", "since"},
		{"since in the year 1", aliceKey, "/v1/executions?since=0001-01-01T00:00:00Z", "since"},
		{"until before 1970", aliceKey, "/v1/executions?until=1969-12-31T23:59:59Z", "until"},
		{"spend since in the year 1", aliceKey, "/v1/spend?since=0001-01-01T00:00:00Z", "since"},
		{"spend until past 9999", aliceKey, "/v1/spend?until=9999-12-31T23:00:00-05:00", "until"},
		{"spend window", aliceKey, "/v1/spend?since=2030-03-15T00:00:00Z&until=2030-03-14T00:00:00Z", "since"},
	}
	for _, c := range cases {
		r := a.do("GET", c.path, c.key, "")
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", c.name, r.body)
		assert.Equal(t, "invalid_request", r.errorCode(t), c.name)
		e := r.json(t)["error"].(map[string]any)
		assert.Equal(t, c.param, e["parameter"], c.name)
		assert.Contains(t, e["message"], c.param, c.name)
	}
}

func TestSpendOverHTTP(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	q := a.quote(aliceKey, "goal-data")
	r := a.call(aliceKey, "goal-data", "g1", callBody(q, `{"goal":"g","step":1}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	a.callOnce(aliceKey, "k1")
	a.clock.Advance(1e9)

	r = a.do("GET", "/v1/spend?groupBy=tool", aliceKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	sum := r.json(t)
	assert.Equal(t, "tool", sum["groupBy"])
	assert.Equal(t, "0.1100", sum["totalUsd"])
	assert.Equal(t, []any{
		map[string]any{"key": "earthquake-search", "totalUsd": "0.0000", "count": 1.0},
		map[string]any{"key": "goal-data", "totalUsd": "0.1100", "count": 1.0},
	}, sum["groups"])
	assert.Equal(t, "2026-03-01T00:00:00Z", sum["since"])

	r = a.do("GET", "/v1/spend?groupBy=day&since=2026-03-14T00:00:00Z", aliceKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, []any{map[string]any{"key": "2026-03-14", "totalUsd": "0.1100", "count": 2.0}}, r.json(t)["groups"])

	r = a.do("GET", "/v1/spend", bobKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "0.0000", r.json(t)["totalUsd"])
	assert.Equal(t, []any{}, r.json(t)["groups"])
}

// TestIncomingTraceparentIsContinued: a call that arrives with a W3C
// traceparent is traced as part of the caller's trace.
func TestIncomingTraceparentIsContinued(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	a := newAPI(t, nil, func(c *toolgate.Config) { c.TracerProvider = tp })

	// The caller's own span, as an agent framework would send it.
	ctx, parent := tp.Tracer("agent").Start(context.Background(), "agent step")
	header := http.Header{}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(header))
	parent.End()
	traceparent := header.Get("Traceparent")
	require.NotEmpty(t, traceparent)

	r := a.do("POST", "/v1/tools/earthquake-search/quote", aliceKey, "{}", "Traceparent", traceparent)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	var quote tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == "quote earthquake-search" {
			quote = s
		}
	}
	assert.Equal(t, parent.SpanContext().TraceID(), quote.SpanContext.TraceID())
	assert.Equal(t, parent.SpanContext().SpanID(), quote.Parent.SpanID())
	assert.True(t, quote.Parent.IsRemote())

	// Without the header, a trace of its own.
	spans.Reset()
	r = a.do("POST", "/v1/tools/earthquake-search/quote", aliceKey, "{}")
	require.Equal(t, http.StatusCreated, r.status)
	require.Len(t, spans.GetSpans(), 1)
	assert.False(t, spans.GetSpans()[0].Parent.IsValid())
}

// TestApproverListsItsPrincipalsExecutions: an approver key lists the
// executions of the principals it approves for, with how each was
// approved (a grant, with its id), and their spend; no one else's, and
// never with another lister's cursor.
func TestApproverListsItsPrincipalsExecutions(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	const input = `{"v":"hello"}`
	q, req := a.askApproval(agentKey, "echo", input)
	grant := req["id"].(string)
	r := a.do("POST", "/v1/approval-requests/"+grant+"/approve", patKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	r = a.call(agentKey, "echo", "granted-1", grantBody(q, input, grant))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	agentExec := r.header.Get("Toolgate-Execution-Id")
	a.clock.Advance(1e9)
	aliceExec := a.callOnce(aliceKey, "alice-1")
	a.clock.Advance(1e9)

	r = a.do("GET", "/v1/executions", patKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	items := r.json(t)["executions"].([]any)
	require.Len(t, items, 2)
	alice, agent := items[0].(map[string]any), items[1].(map[string]any)
	assert.Equal(t, aliceExec, alice["id"])
	assert.Equal(t, "alice", alice["principal"])
	assert.Equal(t, map[string]any{"kind": "digest"}, alice["approval"])
	assert.Equal(t, agentExec, agent["id"])
	assert.Equal(t, "agent", agent["principal"])
	assert.Equal(t, map[string]any{"kind": "grant", "grantId": grant}, agent["approval"])

	// The agent sees its own only; sam approves for neither.
	r = a.do("GET", "/v1/executions", agentKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.Len(t, r.json(t)["executions"], 1)
	r = a.do("GET", "/v1/executions", samKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, []any{}, r.json(t)["executions"])

	// A cursor is its lister's: alice's does not page pat's listing.
	a.clock.Advance(1e9)
	a.callOnce(aliceKey, "alice-2")
	r = a.do("GET", "/v1/executions?limit=1", aliceKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	cursor := r.json(t)["nextCursor"].(string)
	r = a.do("GET", "/v1/executions?limit=1&cursor="+url.QueryEscape(cursor), patKey, "")
	require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
	assert.Equal(t, "cursor", r.json(t)["error"].(map[string]any)["parameter"])

	a.clock.Advance(1e9) // until, by default now, is exclusive
	r = a.do("GET", "/v1/spend?groupBy=tool", patKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var total float64
	for _, g := range r.json(t)["groups"].([]any) {
		total += g.(map[string]any)["count"].(float64)
	}
	assert.EqualValues(t, 3, total, "the agent's call and alice's two")
}
