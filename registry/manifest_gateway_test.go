package registry_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
)

// fakeProvider is a local provider that records what reaches it.
type fakeProvider struct {
	*httptest.Server
	mu       sync.Mutex
	seen     []seenRequest
	response func(w http.ResponseWriter, r *http.Request)
}

type seenRequest struct {
	method, uri string
	header      http.Header
}

func newFakeProvider(t *testing.T, response func(w http.ResponseWriter, r *http.Request)) *fakeProvider {
	p := &fakeProvider{response: response}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, seenRequest{method: r.Method, uri: r.RequestURI, header: r.Header.Clone()})
		p.mu.Unlock()
		p.response(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *fakeProvider) requests() []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seenRequest(nil), p.seen...)
}

func answerJSON(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// manifestGateway registers the manifest with the operator pointing it at
// origin, as the server does for an "upstreams" entry, and returns a
// gateway over it with the default outbound stack.
func manifestGateway(t *testing.T, data []byte, origin string, trust *registry.Trust) *toolgate.Gateway {
	t.Helper()
	reg := registry.New()
	tool, err := registry.ParseManifest("tool.json", data, parseOpts(map[string]string{"station-readings": origin}))
	require.NoError(t, err)
	require.NoError(t, reg.Register(tool))
	require.NoError(t, reg.SetOrigin(tool.Slug, origin))
	if trust != nil {
		require.NoError(t, reg.SetTrust(tool.Slug, *trust))
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg})
	require.NoError(t, err)
	return gw
}

// quoteAndCall quotes the manifest tool for alice and calls it with input,
// approving the quoted digest.
func quoteAndCall(t *testing.T, gw *toolgate.Gateway, key, input string) toolgatetype.Execution {
	t.Helper()
	q, err := gw.Quote(t.Context(), "alice", "station-readings")
	require.NoError(t, err)
	require.True(t, q.Policy.Callable, "%v", q.Policy.Reasons)
	res, err := gw.Call(t.Context(), "alice", toolgatetype.CallRequest{
		Tool: "station-readings", QuoteID: q.Quote.ID, Input: json.RawMessage(input),
		ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: key,
	})
	require.NoError(t, err)
	return res.Execution
}

// TestManifestToolThroughTheGateway: the provider gets the request the
// manifest describes, with the operator's key in its header, and the caller
// gets the projected output.
func TestManifestToolThroughTheGateway(t *testing.T) {
	t.Parallel()
	provider := newFakeProvider(t, answerJSON(200,
		`{"meta":{"found":2},"results":[{"sensor":"pm25","value":4.2,"extra":"dropped"},{"sensor":"no2","value":17}]}`))
	gw := manifestGateway(t, []byte(baseManifest), provider.URL, nil)

	exec := quoteAndCall(t, gw, "call-1", `{"stationId":"S 17","units":"metric"}`)
	require.Equal(t, toolgatetype.StatusCompleted, exec.Status, "%+v", exec.Error)
	assert.JSONEq(t, `[{"sensor":"pm25","value":4.2},{"sensor":"no2","value":17}]`, string(exec.Output))

	seen := provider.requests()
	require.Len(t, seen, 1)
	assert.Equal(t, http.MethodGet, seen[0].method)
	assert.Equal(t, "/v3/stations/S%2017/latest?format=json&limit=3&units=metric", seen[0].uri)
	assert.Equal(t, []string{testSecret}, seen[0].header.Values("X-API-Key"), "the operator's key, once, in its header")
	assert.Equal(t, "toolgate", seen[0].header.Get("X-Client"))
	assert.Equal(t, "metric", seen[0].header.Get("X-Units"))
}

// TestManifestToolBadAnswerIsNotCharged: an answer that does not match the
// pointer or the output schema is a failed execution, not charged.
func TestManifestToolBadAnswerIsNotCharged(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	answer := `{"meta":{}}`
	provider := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		answerJSON(200, answer)(w, r)
	})
	setAnswer := func(s string) { mu.Lock(); answer = s; mu.Unlock() }
	doc := manifestDoc(t)
	doc["pricing"] = map[string]any{"type": "per_call", "amount": "0.0250"}
	yes := true
	gw := manifestGateway(t, encode(t, doc), provider.URL, &registry.Trust{PaymentVerified: &yes, EndpointVerified: &yes})

	exec := quoteAndCall(t, gw, "no-pointer", `{"stationId":"S1"}`)
	assert.Equal(t, toolgatetype.StatusFailed, exec.Status)
	require.NotNil(t, exec.Error)
	assert.Equal(t, registry.CodeUpstreamInvalidResponse, exec.Error.Code)
	assert.Equal(t, "Acme Sensors returned an answer with nothing at /results", exec.Error.Message)
	assert.Equal(t, "null", string(exec.Output))

	setAnswer(`{"results":[{"sensor":"pm25","value":"high"}]}`)
	exec = quoteAndCall(t, gw, "wrong-type", `{"stationId":"S1"}`)
	assert.Equal(t, toolgatetype.StatusFailed, exec.Status)
	require.NotNil(t, exec.Error)
	assert.Equal(t, registry.CodeOutputInvalid, exec.Error.Code)

	q, err := gw.Quote(t.Context(), "alice", "station-readings")
	require.NoError(t, err)
	assert.Equal(t, "0.0000", q.Controls.Global.DailyUsedUSD, "failed executions are not charged")

	setAnswer(`{"results":[{"sensor":"pm25","value":4.2}]}`)
	exec = quoteAndCall(t, gw, "good", `{"stationId":"S1"}`)
	assert.Equal(t, toolgatetype.StatusCompleted, exec.Status)
	assert.Equal(t, toolgatetype.Cost{PriceUSD: "0.0250", FeeUSD: "0.0025", TotalUSD: "0.0275", Currency: "USD"}, exec.Cost)
	q, err = gw.Quote(t.Context(), "alice", "station-readings")
	require.NoError(t, err)
	assert.Equal(t, "0.0275", q.Controls.Global.DailyUsedUSD, "a completed one is")
}

// TestManifestToolRedirectDoesNotCarryTheCredential: a provider sending
// the gateway elsewhere gets no second request, so the key goes nowhere
// but the tool's own origin.
func TestManifestToolRedirectDoesNotCarryTheCredential(t *testing.T) {
	t.Parallel()
	elsewhere := newFakeProvider(t, answerJSON(200, `{"results":[]}`))
	provider := newFakeProvider(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	})
	gw := manifestGateway(t, []byte(baseManifest), provider.URL, nil)

	exec := quoteAndCall(t, gw, "redirected", `{"stationId":"S1"}`)
	assert.Equal(t, toolgatetype.StatusFailed, exec.Status)
	require.NotNil(t, exec.Error)
	assert.Equal(t, registry.CodeUpstreamError, exec.Error.Code)
	assert.Contains(t, exec.Error.Message, "answered HTTP 302")
	assert.Len(t, provider.requests(), 1)
	assert.Empty(t, elsewhere.requests(), "the redirect is not followed")
}

// TestManifestToolRefusesInputThatWouldChangeTheRequest: a dot segment in
// the path or a line break in a header is a failed, uncharged execution,
// and the provider is never contacted.
func TestManifestToolRefusesInputThatWouldChangeTheRequest(t *testing.T) {
	t.Parallel()
	provider := newFakeProvider(t, answerJSON(200, `{"results":[]}`))
	gw := manifestGateway(t, []byte(baseManifest), provider.URL, nil)

	for i, input := range []string{`{"stationId":".."}`, `{"stationId":"S1","units":"metric\r\nX-Injected: 1"}`} {
		exec := quoteAndCall(t, gw, "refused-"+string(rune('a'+i)), input)
		assert.Equal(t, toolgatetype.StatusFailed, exec.Status, input)
		require.NotNil(t, exec.Error)
		assert.Equal(t, registry.CodeUpstreamUnavailable, exec.Error.Code)
	}
	assert.Empty(t, provider.requests())

	exec := quoteAndCall(t, gw, "escaped", `{"stationId":"../admin?x=1"}`)
	assert.Equal(t, toolgatetype.StatusCompleted, exec.Status)
	seen := provider.requests()
	require.Len(t, seen, 1)
	assert.Equal(t, "/v3/stations/..%2Fadmin%3Fx=1/latest?format=json&limit=3", seen[0].uri)
}

// TestManifestToolPlainHTTPNeedsTheOperatorAtCallTime: a manifest parsed
// with an operator origin but registered without SetOrigin cannot reach
// its plain-HTTP origin: the outbound checks still apply.
func TestManifestToolPlainHTTPNeedsTheOperatorAtCallTime(t *testing.T) {
	t.Parallel()
	provider := newFakeProvider(t, answerJSON(200, `{"results":[]}`))
	doc := manifestDoc(t)
	setPath(doc, "endpoint.origin", provider.URL)
	reg := registry.New()
	tool, err := registry.ParseManifest("tool.json", encode(t, doc), parseOpts(map[string]string{"station-readings": provider.URL}))
	require.NoError(t, err)
	require.NoError(t, reg.Register(tool))
	gw, err := toolgate.New(memory.New(), &toolgate.Config{Registry: reg})
	require.NoError(t, err)

	exec := quoteAndCall(t, gw, "no-operator", `{"stationId":"S1"}`)
	assert.Equal(t, toolgatetype.StatusFailed, exec.Status)
	assert.Empty(t, provider.requests())
}
