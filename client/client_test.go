package client

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The quote and the call a client gets are the library's own, as in
// process: same fields, the body exactly as stored.
func TestQuoteCallAndExecution(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.client(nil)
	ctx := context.Background()

	q, err := c.Quote(ctx, "paid")
	require.NoError(t, err)
	local := e.quote("paid")
	assert.Equal(t, local.Policy, q.Policy)
	assert.Equal(t, local.Tool, q.Tool)
	assert.Equal(t, "0.1100", q.Quote.TotalUSD)
	assert.True(t, q.Controls.Approved)
	assert.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, q.Policy.Approval.Requirement)

	res, err := c.Call(ctx, toolgatetype.CallRequest{Tool: "paid", QuoteID: q.Quote.ID, Input: []byte(`{"v":"hi"}`)})
	toolgatetest.RequireCompleted(t, res, err, "0.1100")
	assert.False(t, res.Replayed)

	got, err := c.GetExecution(ctx, res.Execution.ID)
	require.NoError(t, err)
	assert.Equal(t, res.Execution, got.Execution)
	assert.Equal(t, string(res.Body), string(got.Body), "the stored bytes")
	inProcess, err := e.gw.GetExecution(ctx, "alice", res.Execution.ID)
	require.NoError(t, err)
	assert.Equal(t, string(inProcess.Body), string(got.Body))

	// A call repeated with its key is the same call.
	again, err := c.Call(ctx, toolgatetype.CallRequest{Tool: "paid", QuoteID: q.Quote.ID, Input: []byte(`{ "v": "hi" }`), IdempotencyKey: res.IdempotencyKey})
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	assert.Equal(t, string(res.Body), string(again.Body))
	e.gw.Upstream.RequireCalls(t, 1)
}

// The registry listing is fetched a page at a time, as the loop asks for
// more, in the gateway's order.
func TestEntries(t *testing.T) {
	t.Parallel()
	tools := testTools()
	for i := 0; i < 7; i++ {
		tool := toolgatetest.EchoTool()
		tool.Slug, tool.Name = fmt.Sprintf("echo-%d", i), fmt.Sprintf("Echo %d", i)
		tools = append(tools, tool)
	}
	e := newEnv(t, &envOptions{tools: tools})
	c := e.client(&Options{PageSize: 3})
	ctx := context.Background()

	want, _, err := e.gw.List(ctx, "", 100, 0, toolgatetype.EntryOptions{})
	require.NoError(t, err)
	require.Len(t, want, 10)
	var slugs, wantSlugs []string
	for _, w := range want {
		wantSlugs = append(wantSlugs, w.Slug)
	}
	for entry, err := range c.Entries(ctx, "") {
		require.NoError(t, err)
		slugs = append(slugs, entry.Slug)
	}
	assert.Equal(t, wantSlugs, slugs)
	assert.Len(t, e.proxy.requests(), 4, "pages of 3, 3, 3 and 1")

	before := len(e.proxy.requests())
	n := 0
	for range c.Entries(ctx, "") {
		if n++; n == 4 {
			break
		}
	}
	assert.Len(t, e.proxy.requests(), before+2, "no page is fetched that the loop did not reach")

	var found []string
	for entry, err := range c.Entries(ctx, "echo 4") {
		require.NoError(t, err)
		found = append(found, entry.Slug)
	}
	assert.Equal(t, []string{"echo-4"}, found)

	var errs []error
	for entry, err := range e.clientAt("http://"+freeAddr(t), "", &Options{MaxAttempts: 1}).Entries(ctx, "") {
		assert.Nil(t, entry)
		errs = append(errs, err)
	}
	require.Len(t, errs, 1, "an error ends the listing")
	var te *TransportError
	assert.ErrorAs(t, errs[0], &te)
}

func TestEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	anonymous := e.clientAt(e.front.URL, "", nil)
	got, err := anonymous.Entry(context.Background(), "paid")
	require.NoError(t, err, "the registry is public")
	want, err := e.gw.Entry(context.Background(), "paid", toolgatetype.EntryOptions{})
	require.NoError(t, err)
	assert.Equal(t, want.Policy, got.Policy)
	assert.Equal(t, want.Version, got.Version)
	assert.Equal(t, want.Trust, got.Trust)
	assert.JSONEq(t, string(want.InputSchema), string(got.InputSchema))
	assert.Equal(t, "/v1/tools/paid/call", got.Access.Endpoint.Path)
	assert.Equal(t, "/v1/registry/tools/paid/docs", got.Documentation.JSON)
}

// Spend controls set over the client are the ones the gateway keeps.
func TestSpendControls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.client(nil)
	ctx := context.Background()
	inProcess := func() toolgatetype.SpendControls {
		sc, err := e.gw.SpendControls(ctx, "alice")
		require.NoError(t, err)
		return sc
	}

	none, err := c.SpendControls(ctx)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.SpendControls{}, none)

	five, ten := 5, 10
	set := toolgatetype.SpendControls{
		DailyLimitUSD: dec("5"), RateLimitPerMinute: &ten,
		Tools: map[string]toolgatetype.ToolSpendControls{"paid": {Allowed: new(bool)}},
	}
	stored, err := c.PutSpendControls(ctx, set)
	require.NoError(t, err)
	assertSameControls(t, set, stored)
	assertSameControls(t, set, inProcess())
	q, err := c.Quote(ctx, "paid")
	require.NoError(t, err)
	assert.Equal(t, []string{"This tool is blocked by its spend control"}, q.Controls.Violations)

	// One tool's controls, on their own.
	echo := toolgatetype.ToolSpendControls{DailyLimitUSD: dec("0.25"), RateLimitPerHour: &five}
	gotEcho, err := c.PutToolSpendControls(ctx, "echo", echo)
	require.NoError(t, err)
	assertSameControls(t, toolgatetype.SpendControls{Tools: map[string]toolgatetype.ToolSpendControls{"echo": echo}},
		toolgatetype.SpendControls{Tools: map[string]toolgatetype.ToolSpendControls{"echo": gotEcho}})
	read, err := c.ToolSpendControls(ctx, "echo")
	require.NoError(t, err)
	assert.Equal(t, gotEcho, read)

	// Without tools, PUT keeps them; with an empty map, it removes them.
	kept, err := c.PutSpendControls(ctx, toolgatetype.SpendControls{DailyLimitUSD: dec("7")})
	require.NoError(t, err)
	assert.Len(t, kept.Tools, 2)
	assert.Len(t, inProcess().Tools, 2)
	require.NoError(t, c.DeleteToolSpendControls(ctx, "echo"))
	_, err = c.ToolSpendControls(ctx, "echo")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeNotFound)
	cleared, err := c.PutSpendControls(ctx, toolgatetype.SpendControls{DailyLimitUSD: dec("7"), Tools: map[string]toolgatetype.ToolSpendControls{}})
	require.NoError(t, err)
	assert.Empty(t, cleared.Tools)
	assert.Empty(t, inProcess().Tools)

	_, err = c.PutSpendControls(ctx, toolgatetype.SpendControls{DailyLimitUSD: dec("-1")})
	refused := toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest)
	assert.Contains(t, refused.Message, "dailyLimitUsd")
	_, err = c.PutToolSpendControls(ctx, "nope", echo)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeToolNotFound)
}

// assertSameControls compares spend controls by value, amounts to the cent
// and beyond, whatever their decimal exponent.
func assertSameControls(t *testing.T, want, got toolgatetype.SpendControls) {
	t.Helper()
	assert.Equal(t, render(want), render(got))
}

func render(sc toolgatetype.SpendControls) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %s %s", dstr(sc.MaxPerCallUSD), dstr(sc.DailyLimitUSD), dstr(sc.MonthlyLimitUSD),
		istr(sc.RateLimitPerMinute), istr(sc.RateLimitPerHour))
	for _, slug := range []string{"blocked", "echo", "paid"} {
		tc, ok := sc.Tools[slug]
		if !ok {
			continue
		}
		allowed := "-"
		if tc.Allowed != nil {
			allowed = fmt.Sprint(*tc.Allowed)
		}
		fmt.Fprintf(&b, " %s:{%s %s %s %s %s %s}", slug, allowed, dstr(tc.MaxPerCallUSD), dstr(tc.DailyLimitUSD),
			dstr(tc.MonthlyLimitUSD), istr(tc.RateLimitPerMinute), istr(tc.RateLimitPerHour))
	}
	return b.String()
}

func dstr(d *decimal.Decimal) string {
	if d == nil {
		return "-"
	}
	return d.StringFixed(4)
}

func istr(n *int) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

// Standing approvals set over the client are the gateway's.
func TestStandingApprovals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.client(nil)
	ctx := context.Background()
	q, err := c.Quote(ctx, "echo")
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.RequirementExplicitUnverified, q.Policy.Approval.Requirement)

	sa, err := c.SetApproval(ctx, "echo", toolgatetype.ApprovalNeverAsk, *q.Quote.ManifestDigest)
	require.NoError(t, err)
	assert.Equal(t, &toolgatetype.StandingApproval{Mode: toolgatetype.ApprovalNeverAsk, ManifestDigest: *q.Quote.ManifestDigest}, sa)

	list, err := c.Approvals(ctx)
	require.NoError(t, err)
	want, err := e.gw.Approvals(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, want, list)
	require.Len(t, list, 1)

	// Covered now: the call needs no approval.
	q, err = c.Quote(ctx, "echo")
	require.NoError(t, err)
	res, err := c.Call(ctx, toolgatetype.CallRequest{Tool: "echo", QuoteID: q.Quote.ID, Input: []byte(`{"v":"x"}`)})
	toolgatetest.RequireCompleted(t, res, err, "0.0000")

	// Stale once the digest changes.
	require.NoError(t, e.gw.Registry.SetOrigin("echo", "https://mirror.example.test"))
	list, err = c.Approvals(ctx)
	require.NoError(t, err)
	assert.True(t, list[0].Stale)

	require.NoError(t, c.DeleteApproval(ctx, "echo"))
	list, err = c.Approvals(ctx)
	require.NoError(t, err)
	assert.Empty(t, list)
}

// The API key goes in the Authorization header and nowhere else: not in
// a log line, not in an error.
func TestAPIKeyStaysSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := e.client(&Options{Logger: logger, MaxAttempts: 3})
	ctx := context.Background()

	e.proxy.inject(dropAnswer, reply(503, retryAfter("1"), "busy"))
	res, err := c.Call(ctx, approved(e.quote("echo"), "x"))
	require.NoError(t, err)
	e.proxy.inject(repeat(reply(502, nil, "bad gateway"), 3)...)
	_, callErr := c.Call(ctx, approved(e.quote("echo"), "y"))
	require.Error(t, callErr)
	e.proxy.inject(dropAnswer)
	_, quoteErr := c.Quote(ctx, "echo")
	require.Error(t, quoteErr)
	_, refusedErr := e.clientAt("http://"+freeAddr(t), aliceKey, &Options{Logger: logger, MaxAttempts: 2}).GetExecution(ctx, res.Execution.ID)
	require.Error(t, refusedErr)

	assert.Contains(t, logs.String(), "retrying", "the retries were logged")
	assert.NotContains(t, logs.String(), aliceKey)
	for _, err := range []error{callErr, quoteErr, refusedErr} {
		assert.NotContains(t, err.Error(), aliceKey)
		assert.NotContains(t, fmt.Sprintf("%#v", err), aliceKey)
	}
	for _, s := range e.proxy.requests() {
		assert.Equal(t, []string{"Bearer " + aliceKey}, s.header.Values("Authorization"))
		assert.NotContains(t, s.path, aliceKey)
	}
}

func TestUserAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, err := e.client(nil).Entry(context.Background(), "echo")
	require.NoError(t, err)
	_, err = e.client(&Options{UserAgent: "agent-runtime/2"}).Entry(context.Background(), "echo")
	require.NoError(t, err)
	seen := e.proxy.requests()
	assert.Equal(t, DefaultUserAgent, seen[0].header.Get("User-Agent"))
	assert.Equal(t, "agent-runtime/2", seen[1].header.Get("User-Agent"))
}

// A client mounted under a prefix reaches the routes beneath it.
func TestBaseURLWithPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	mux := http.NewServeMux()
	mux.Handle("/gateway/", http.StripPrefix("/gateway", e.proxy))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, base := range []string{srv.URL + "/gateway", srv.URL + "/gateway/"} {
		q, err := e.clientAt(base, aliceKey, nil).Quote(context.Background(), "echo")
		require.NoError(t, err, base)
		assert.Equal(t, "echo", q.Tool.Slug)
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, base, key string
		opts            *Options
		want            string
	}{
		{"no scheme", "gateway.example.com", "k", nil, "must be http or https"},
		{"another scheme", "ftp://gateway.example.com", "k", nil, "must be http or https"},
		{"no host", "http://", "k", nil, "has no host"},
		{"credentials in the URL", "https://user:pw@gateway.example.com", "k", nil, "must not carry credentials"},
		{"a query", "https://gateway.example.com/?x=1", "k", nil, "must not have a query"},
		{"a key with a space", "https://gateway.example.com", "tg secret", nil, "printable ASCII without spaces"},
		{"a key with a newline", "https://gateway.example.com", "tg\nsecret", nil, "printable ASCII without spaces"},
		{"a key too long", "https://gateway.example.com", strings.Repeat("k", 513), nil, "longer than 512"},
		{"no attempts", "https://gateway.example.com", "k", &Options{MaxAttempts: -1}, "MaxAttempts"},
		{"waits upside down", "https://gateway.example.com", "k", &Options{RetryWaitMin: 2e9, RetryWaitMax: 1e9}, "RetryWaitMin"},
		{"pages too big", "https://gateway.example.com", "k", &Options{PageSize: 101}, "PageSize"},
	} {
		_, err := New(tc.base, tc.key, tc.opts)
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
		if tc.key != "k" {
			assert.NotContains(t, err.Error(), tc.key, "%s: the key is not repeated", tc.name)
		}
	}
	c, err := New("https://gateway.example.com/", "", nil)
	require.NoError(t, err, "no key: the public registry only")
	assert.Equal(t, "https://gateway.example.com", c.base)
}

// Requests the gateway would refuse for their form are refused before
// they are sent, with the gateway's own error.
func TestRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.client(nil)
	ctx := context.Background()
	_, err := c.Quote(ctx, "")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeToolNotFound)
	_, err = c.Call(ctx, toolgatetype.CallRequest{Tool: "echo", QuoteID: "q", Input: []byte(`{"v":`)})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest)
	_, err = c.Call(ctx, toolgatetype.CallRequest{Tool: "echo", QuoteID: "q", IdempotencyKey: "k\x01"})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeIdempotencyKeyInvalid)
	_, err = c.GetExecution(ctx, "")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeExecutionNotFound)
	assert.Empty(t, e.proxy.requests())
}
