package toolgate_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// auditGateway has the echo tool and paid-echo, and a clock that the test
// moves a minute before each call, so executions have distinct times.
func auditGateway(t *testing.T) *toolgatetest.Gateway {
	t.Helper()
	return toolgatetest.New(t, &toolgatetest.Options{Tools: []*registry.Tool{toolgatetest.EchoTool(), paidEcho()}})
}

// callAt moves the clock on by a minute and makes one call.
func callAt(t *testing.T, g *toolgatetest.Gateway, principal, tool, input string, approve bool) *toolgatetype.CallResult {
	t.Helper()
	g.Clock.Advance(time.Minute)
	q := g.MustQuote(t, principal, tool)
	req := toolgatetype.CallRequest{Tool: tool, QuoteID: q.Quote.ID, Input: json.RawMessage(input), IdempotencyKey: "k-" + q.Quote.ID}
	if approve {
		req.ApprovalDigest = *q.Quote.ManifestDigest
	}
	res, err := g.Call(context.Background(), principal, req)
	require.NoError(t, err)
	return res
}

func idsOf(page *toolgatetype.ExecutionPage) []string {
	out := make([]string, len(page.Executions))
	for i, e := range page.Executions {
		out[i] = e.ID
	}
	return out
}

func TestListExecutions(t *testing.T) {
	t.Parallel()
	g := auditGateway(t)
	ctx := context.Background()
	start := g.Clock.Now()
	free := callAt(t, g, "alice", "echo", `{"v":"one"}`, true)
	failed := callAt(t, g, "alice", "echo", `{"v":"far more than twenty characters"}`, true)
	paid := callAt(t, g, "alice", "paid-echo", `{"v":"three"}`, false)
	callAt(t, g, "bob", "echo", `{"v":"not alice's"}`, true)

	page, err := g.ListExecutions(ctx, "alice", toolgatetype.ExecutionFilter{})
	require.NoError(t, err)
	assert.Equal(t, []string{paid.Execution.ID, failed.Execution.ID, free.Execution.ID}, idsOf(page), "newest first, alice's only")
	assert.Nil(t, page.NextCursor)

	v, err := g.Registry.Lookup("paid-echo")
	require.NoError(t, err)
	item := page.Executions[0]
	assert.Equal(t, toolgatetype.ExecutionSummary{
		ID:             paid.Execution.ID,
		Principal:      "alice",
		Tool:           toolgatetype.ToolRef{ID: v.Tool.ID, Slug: "paid-echo", Name: "Paid Echo"},
		ManifestDigest: v.Digest,
		Status:         toolgatetype.StatusCompleted,
		Cost:           toolgatetype.Cost{PriceUSD: "0.1000", FeeUSD: "0.0100", TotalUSD: "0.1100", Currency: "USD"},
		Approval:       &toolgatetype.ApprovalRecord{Kind: toolgatetype.ApprovalKindStanding},
		CreatedAt:      start.Add(3 * time.Minute),
		FinishedAt:     start.Add(3 * time.Minute),
	}, item)
	assert.Equal(t, &toolgatetype.ApprovalRecord{Kind: toolgatetype.ApprovalKindDigest}, page.Executions[2].Approval)
	body, err := json.Marshal(page)
	require.NoError(t, err)
	assert.NotContains(t, string(body), "output", "a listing never carries outputs")
	assert.NotContains(t, string(body), "one")

	for _, c := range []struct {
		name string
		f    toolgatetype.ExecutionFilter
		want []string
	}{
		{"by slug", toolgatetype.ExecutionFilter{Tool: "echo"}, []string{failed.Execution.ID, free.Execution.ID}},
		{"by id", toolgatetype.ExecutionFilter{Tool: v.Tool.ID}, []string{paid.Execution.ID}},
		{"a tool no longer registered finds nothing here", toolgatetype.ExecutionFilter{Tool: "retired-tool"}, []string{}},
		{"failed", toolgatetype.ExecutionFilter{Status: toolgatetype.StatusFailed}, []string{failed.Execution.ID}},
		{"completed", toolgatetype.ExecutionFilter{Status: toolgatetype.StatusCompleted}, []string{paid.Execution.ID, free.Execution.ID}},
		{"since", toolgatetype.ExecutionFilter{Since: start.Add(2 * time.Minute)}, []string{paid.Execution.ID, failed.Execution.ID}},
		{"until", toolgatetype.ExecutionFilter{Until: start.Add(2 * time.Minute)}, []string{free.Execution.ID}},
	} {
		page, err := g.ListExecutions(ctx, "alice", c.f)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, idsOf(page), c.name)
	}
}

func TestListExecutionsPages(t *testing.T) {
	t.Parallel()
	g := auditGateway(t)
	ctx := context.Background()
	var want []string
	for i := range 7 {
		res := callAt(t, g, "alice", "echo", fmt.Sprintf(`{"v":"%d"}`, i), true)
		want = append([]string{res.Execution.ID}, want...)
	}
	var got []string
	f := toolgatetype.ExecutionFilter{Limit: 3}
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3, "7 executions are 3 pages of 3")
		page, err := g.ListExecutions(ctx, "alice", f)
		require.NoError(t, err)
		got = append(got, idsOf(page)...)
		// Calls made between pages are newer than every cursor: they
		// neither repeat nor push anything into the next page.
		callAt(t, g, "alice", "echo", `{"v":"late"}`, true)
		if page.NextCursor == nil {
			break
		}
		f.Cursor = *page.NextCursor
	}
	assert.Equal(t, want, got)
}

// TestListExecutionsRefusesBadFilters: every bad filter is invalid_request
// naming its parameter, and a cursor from another caller, another listing
// or altered in any way is refused rather than read.
func TestListExecutionsRefusesBadFilters(t *testing.T) {
	t.Parallel()
	g := auditGateway(t)
	ctx := context.Background()
	for range 3 {
		callAt(t, g, "alice", "echo", `{"v":"a"}`, true)
		callAt(t, g, "bob", "echo", `{"v":"b"}`, true)
	}
	alicePage, err := g.ListExecutions(ctx, "alice", toolgatetype.ExecutionFilter{Limit: 1})
	require.NoError(t, err)
	require.NotNil(t, alicePage.NextCursor)
	aliceCursor := *alicePage.NextCursor
	raw, err := base64.RawURLEncoding.DecodeString(aliceCursor)
	require.NoError(t, err)
	flipped := append([]byte(nil), raw...)
	flipped[5] ^= 1 // an earlier instant, as someone hoping to see more would try

	now := g.Clock.Now()
	cases := []struct {
		name      string
		principal string
		f         toolgatetype.ExecutionFilter
		param     string
	}{
		{"limit below 1", "alice", toolgatetype.ExecutionFilter{Limit: -1}, "limit"},
		{"limit over 100", "alice", toolgatetype.ExecutionFilter{Limit: 101}, "limit"},
		{"status", "alice", toolgatetype.ExecutionFilter{Status: "nope"}, "status"},
		{"until not after since", "alice", toolgatetype.ExecutionFilter{Since: now, Until: now}, "until"},
		{"not a cursor", "alice", toolgatetype.ExecutionFilter{Cursor: "nope"}, "cursor"},
		{"altered cursor", "alice", toolgatetype.ExecutionFilter{Cursor: base64.RawURLEncoding.EncodeToString(flipped)}, "cursor"},
		{"cut cursor", "alice", toolgatetype.ExecutionFilter{Cursor: aliceCursor[:len(aliceCursor)-2]}, "cursor"},
		{"another caller's cursor", "bob", toolgatetype.ExecutionFilter{Limit: 1, Cursor: aliceCursor}, "cursor"},
		{"another listing's cursor", "alice", toolgatetype.ExecutionFilter{Limit: 1, Status: toolgatetype.StatusCompleted, Cursor: aliceCursor}, "cursor"},
	}
	for _, c := range cases {
		_, err := g.ListExecutions(ctx, c.principal, c.f)
		e := toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest)
		assert.Equal(t, c.param, e.Parameter, c.name)
		assert.Contains(t, e.Message, c.param, c.name)
	}
	// The same cursor, by its own caller and listing, works, whatever the page size.
	page, err := g.ListExecutions(ctx, "alice", toolgatetype.ExecutionFilter{Limit: 5, Cursor: aliceCursor})
	require.NoError(t, err)
	assert.Len(t, page.Executions, 2)
}

func TestSpend(t *testing.T) {
	t.Parallel()
	g := auditGateway(t)
	ctx := context.Background()
	start := g.Clock.Now()
	callAt(t, g, "alice", "paid-echo", `{"v":"a"}`, false)
	callAt(t, g, "alice", "paid-echo", `{"v":"b"}`, false)
	callAt(t, g, "alice", "paid-echo", `{"v":"far more than twenty characters"}`, false) // failed: not charged
	callAt(t, g, "alice", "echo", `{"v":"free"}`, true)
	callAt(t, g, "bob", "paid-echo", `{"v":"bob's"}`, false)
	g.Clock.Advance(24 * time.Hour)
	callAt(t, g, "alice", "paid-echo", `{"v":"next day"}`, false)
	g.Clock.Advance(time.Second) // until, by default now, is exclusive

	byTool, err := g.Spend(ctx, "alice", toolgatetype.SpendFilter{})
	require.NoError(t, err)
	monthStart := time.Date(start.Year(), start.Month(), 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, &toolgatetype.SpendSummary{
		Since: monthStart, Until: g.Clock.Now(), GroupBy: toolgatetype.SpendByTool, TotalUSD: "0.3300",
		Groups: []toolgatetype.SpendGroup{
			{Key: "echo", TotalUSD: "0.0000", Count: 1},
			{Key: "paid-echo", TotalUSD: "0.3300", Count: 3},
		},
	}, byTool)

	byDay, err := g.Spend(ctx, "alice", toolgatetype.SpendFilter{GroupBy: toolgatetype.SpendByDay, Since: start, Until: g.Clock.Now().Add(time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, "0.3300", byDay.TotalUSD)
	assert.Equal(t, []toolgatetype.SpendGroup{
		{Key: start.Format(time.DateOnly), TotalUSD: "0.2200", Count: 3},
		{Key: start.Add(24 * time.Hour).Format(time.DateOnly), TotalUSD: "0.1100", Count: 1},
	}, byDay.Groups)

	for _, c := range []struct {
		f     toolgatetype.SpendFilter
		param string
	}{
		{toolgatetype.SpendFilter{GroupBy: "week"}, "groupBy"},
		{toolgatetype.SpendFilter{Since: start, Until: start}, "since"},
		{toolgatetype.SpendFilter{Until: monthStart}, "until"},
	} {
		_, err := g.Spend(ctx, "alice", c.f)
		assert.Equal(t, c.param, toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest).Parameter)
	}
}
