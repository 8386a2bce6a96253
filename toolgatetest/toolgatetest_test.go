package toolgatetest_test

import (
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// failures is a toolgatetest.T that records what a helper failed with
// instead of failing the test running it, to test the helpers themselves.
type failures struct {
	messages []string
}

func (*failures) Helper() {}

func (f *failures) Fatalf(format string, args ...any) {
	f.messages = append(f.messages, fmt.Sprintf(format, args...))
	runtime.Goexit() // as testing.T's Fatalf stops the test's goroutine
}

// run calls fn with a failures on its own goroutine, as a test would, and
// returns what it failed with, if anything.
func run(fn func(t toolgatetest.T)) []string {
	f := &failures{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn(f)
	}()
	wg.Wait()
	return f.messages
}

func TestDefaultGatewayAnswersBuiltInsAndEcho(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	for _, slug := range []string{"earthquake-search", "exchange-rates", "public-holidays", "goal-data", "current-weather", "echo"} {
		_, err := gw.Registry.Lookup(slug)
		assert.NoError(t, err, slug)
	}
	res, err := gw.CallApproved(t, "alice", "public-holidays", `{"countryCode":"PT","year":2027}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	res, err = gw.CallApproved(t, "alice", "echo", `{"v":"hi"}`)
	out := toolgatetest.RequireCompleted(t, res, err, "0.0000")
	assert.JSONEq(t, `{"value":"hi"}`, string(out), "fields outside the output schema are dropped")

	gw.Upstream.RequireCalls(t, 2)
	reqs := gw.Upstream.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "date.nager.at", reqs[0].URL.Host)
	assert.Equal(t, "/api/v4/Holidays/PT/2027", reqs[0].URL.Path)
	assert.Equal(t, http.MethodGet, reqs[1].Method)
	assert.Equal(t, "hi", reqs[1].URL.Query().Get("v"))
}

func TestUpstreamAnswersAsTold(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	gw.Upstream.Handle(toolgatetest.Reply(http.StatusServiceUnavailable, `{"error":"down"}`))
	res, err := gw.CallApproved(t, "alice", "echo", `{"v":"hi"}`)
	toolgatetest.RequireFailed(t, res, err, registry.CodeUpstreamError)
	gw.RequireSpent(t, "alice", "0.0000")
	assert.GreaterOrEqual(t, gw.Upstream.Calls(), 1)
}

func TestEmptyToolsMeansNoTools(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{}})
	_, err := gw.Gateway.Quote(t.Context(), "alice", "echo")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeToolNotFound)
}

func TestHelpersFailWhenTheyShould(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	completed, err := gw.CallApproved(t, "alice", "echo", `{"v":"hi"}`)
	require.NoError(t, err)
	failed, err := gw.CallApproved(t, "alice", "echo", `{"v":"far more than twenty characters"}`)
	require.NoError(t, err)
	_, refusal := gw.CallApproved(t, "alice", "echo", `{"v":""}`)
	require.Error(t, refusal)

	tests := []struct {
		name string
		fn   func(t toolgatetest.T)
		want string // what the failure says; "" when the helper must pass
	}{
		{"calls match", func(t toolgatetest.T) { gw.Upstream.RequireCalls(t, 2) }, ""},
		{"calls differ", func(t toolgatetest.T) { gw.Upstream.RequireCalls(t, 5) }, "the upstream was reached 2 times, want 5"},
		{"completed at the price", func(t toolgatetest.T) { toolgatetest.RequireCompleted(t, completed, nil, "0.0000") }, ""},
		{"completed at another price", func(t toolgatetest.T) { toolgatetest.RequireCompleted(t, completed, nil, "0.1100") }, "cost $0.0000, want $0.1100"},
		{"failed is not completed", func(t toolgatetest.T) { toolgatetest.RequireCompleted(t, failed, nil, "0.0000") }, "failed (output_invalid"},
		{"refused is not completed", func(t toolgatetest.T) { toolgatetest.RequireCompleted(t, nil, refusal, "0.0000") }, "the call was refused"},
		{"failed with its code", func(t toolgatetest.T) { toolgatetest.RequireFailed(t, failed, nil, registry.CodeOutputInvalid) }, ""},
		{"failed with another code", func(t toolgatetest.T) { toolgatetest.RequireFailed(t, failed, nil, registry.CodeUpstreamError) }, "want upstream_error"},
		{"the refusal's code", func(t toolgatetest.T) { toolgatetest.RequireCode(t, refusal, toolgatetype.CodeInputInvalid) }, ""},
		{"another code", func(t toolgatetest.T) { toolgatetest.RequireCode(t, refusal, toolgatetype.CodeRateLimited) }, "got input_invalid"},
		{"no error at all", func(t toolgatetest.T) { toolgatetest.RequireCode(t, nil, toolgatetype.CodeRateLimited) }, "want a *toolgatetype.Error"},
		{"spent nothing", func(t toolgatetest.T) { gw.RequireSpent(t, "alice", "0.0000") }, ""},
		{"spent something", func(t toolgatetest.T) { gw.RequireSpent(t, "alice", "1.0000") }, "alice has spent $0.0000, want $1.0000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(tt.fn)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Contains(t, got[0], tt.want)
		})
	}
}

func TestFakeClockMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, nil)
	q := gw.MustQuote(t, "alice", "echo")
	assert.Equal(t, toolgatetest.DefaultStart.Add(toolgate.DefaultQuoteTTL), q.Quote.ExpiresAt)
	gw.Clock.Advance(toolgate.DefaultQuoteTTL)
	_, err := gw.Gateway.Call(t.Context(), "alice", toolgatetype.CallRequest{
		Tool: "echo", QuoteID: q.Quote.ID, Input: []byte(`{"v":"late"}`),
		ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: "k",
	})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeQuoteExpired)
	gw.Upstream.RequireCalls(t, 0)
}

func TestApprovedRequest(t *testing.T) {
	t.Parallel()
	mutable := toolgatetest.EchoTool()
	mutable.Slug, mutable.Immutable = "mutable-echo", false
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{toolgatetest.EchoTool(), mutable}})
	for _, tt := range []struct {
		tool       string
		wantDigest bool // the tool has an immutable version to approve
	}{
		{"echo", true},
		{"mutable-echo", false},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			q := gw.MustQuote(t, "alice", tt.tool)
			req := toolgatetest.ApprovedRequest(q, `{"v":"hi"}`, "key-"+tt.tool)
			assert.Equal(t, tt.tool, req.Tool)
			assert.Equal(t, q.Quote.ID, req.QuoteID)
			assert.JSONEq(t, `{"v":"hi"}`, string(req.Input))
			assert.Equal(t, "key-"+tt.tool, req.IdempotencyKey)
			if !tt.wantDigest {
				assert.Nil(t, q.Quote.ManifestDigest)
				assert.Empty(t, req.ApprovalDigest)
				return
			}
			require.NotNil(t, q.Quote.ManifestDigest)
			assert.Equal(t, *q.Quote.ManifestDigest, req.ApprovalDigest)
			res, err := gw.Gateway.Call(t.Context(), "alice", req)
			toolgatetest.RequireCompleted(t, res, err, "0.0000")
		})
	}
}

func TestLowRiskCapabilitiesAreEchosAndEachCallsOwn(t *testing.T) {
	t.Parallel()
	assert.Equal(t, toolgatetest.EchoTool().Capabilities, toolgatetest.LowRiskCapabilities())
	c := toolgatetest.LowRiskCapabilities()
	c.OpenWorld = registry.Bool(true)
	assert.False(t, *toolgatetest.LowRiskCapabilities().OpenWorld, "changing one leaves the next as it was")
}

// TestPricedToolIsCallable: a priced echo tool is what a test author
// expects of a paid tool, quoted callable at its price and charged it,
// with nothing but the price set.
func TestPricedToolIsCallable(t *testing.T) {
	t.Parallel()
	gw := toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{toolgatetest.Priced(toolgatetest.EchoTool(), "0.0500")}})

	q := gw.MustQuote(t, "alice", "echo")
	assert.True(t, q.Policy.Callable, "reasons: %v", q.Policy.Reasons)
	assert.Empty(t, q.Policy.Reasons)
	assert.Equal(t, "0.0500", q.Quote.PriceUSD)

	res, err := gw.CallApproved(t, "alice", "echo", `{"v":"paid"}`)
	out := toolgatetest.RequireCompleted(t, res, err, "0.0550")
	assert.JSONEq(t, `{"value":"paid"}`, string(out))
	assert.Equal(t, "0.0500", res.Execution.Cost.PriceUSD)
	gw.RequireSpent(t, "alice", "0.0550")
}
