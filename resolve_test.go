package toolgate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// resolveEnv is a gateway whose ticket provider hangs up on every request,
// so every call of the ticket tool ends ambiguous; "dana" approves for
// alice, "erin" for someone else.
func resolveEnv(t *testing.T) (*toolgate.Gateway, *ticketProvider, *toolgatetest.FakeClock) {
	t.Helper()
	p := newTicketProvider(t, 1000, false)
	daily := decimal.RequireFromString("0.1000")
	clock := toolgatetest.NewFakeClock(toolgatetest.DefaultStart)
	gw := ticketGatewayWith(t, p.srv.URL, false, func(c *toolgate.Config) {
		c.Clock = clock
		c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"dana": {"alice"}, "erin": {"bob"}}}
		c.SpendControls = toolgatetype.StaticSpendControls{"alice": {DailyLimitUSD: &daily}}
	})
	return gw, p, clock
}

func ambiguousCall(t *testing.T, gw *toolgate.Gateway, key string) *toolgatetype.CallResult {
	t.Helper()
	res, _ := callTicket(t, gw, key)
	require.Equal(t, toolgatetype.StatusAmbiguous, res.Execution.Status, "%s", res.Body)
	return res
}

// An ambiguous call's amount stays reserved: it counts against the daily
// limit (0.0550 of 0.1000), so a second call that would pass the limit is
// refused before it runs; once a person finds the first did not run, its
// amount is released and the next call fits.
func TestAnAmbiguousAmountBlocksTheLimitUntilResolvedFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gw, p, clock := resolveEnv(t)
	first := ambiguousCall(t, gw, "k1")
	clock.Advance(time.Second) // the spend summary ends before now

	q, err := gw.Quote(ctx, "alice", "open-ticket")
	require.NoError(t, err)
	assert.Equal(t, "0.0550", q.Controls.Global.DailyUsedUSD, "reserved, so counted in the day's use")
	assert.False(t, q.Controls.Approved)
	_, err = gw.Call(ctx, "alice", toolgatetype.CallRequest{Tool: "open-ticket", QuoteID: q.Quote.ID,
		Input: []byte(`{"title":"again"}`), ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: "k2"})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeSpendLimitExceeded)
	assert.EqualValues(t, 1, p.requests.Load(), "the refused call never reached the provider")

	spend, err := gw.Spend(ctx, "alice", toolgatetype.SpendFilter{})
	require.NoError(t, err)
	assert.Equal(t, "0.0000", spend.TotalUSD, "an ambiguous call is not charged")

	res, err := gw.ResolveExecution(ctx, "dana", first.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed, Note: "the provider has no such ticket"})
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.StatusFailed, res.Execution.Status)
	require.NotNil(t, res.Execution.Resolution)
	assert.Equal(t, "dana", res.Execution.Resolution.ResolvedBy)
	assert.Equal(t, "the provider has no such ticket", res.Execution.Resolution.Note)

	q, err = gw.Quote(ctx, "alice", "open-ticket")
	require.NoError(t, err)
	assert.Equal(t, "0.0000", q.Controls.Global.DailyUsedUSD, "released")
	assert.True(t, q.Controls.Approved, "the next call fits")

	// The original key now answers with the resolved execution.
	replayed, err := gw.GetExecution(ctx, "alice", first.Execution.ID)
	require.NoError(t, err)
	assert.Equal(t, string(res.Body), string(replayed.Body))
}

// Resolved as completed, the call is charged: it shows in the spend
// summary, once, even when twenty approvers' clicks race.
func TestAnAmbiguousCallResolvedCompletedIsChargedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gw, _, clock := resolveEnv(t)
	first := ambiguousCall(t, gw, "k1")
	clock.Advance(time.Second) // the spend summary ends before now

	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := gw.ResolveExecution(ctx, "dana", first.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusCompleted})
			code := "ok"
			if err != nil {
				code = string(toolgatetest.RequireCode(t, err, toolgatetype.CodeExecutionAlreadyResolved).Code)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, map[string]int{"ok": 1, string(toolgatetype.CodeExecutionAlreadyResolved): 19}, codes)

	got, err := gw.GetExecution(ctx, "alice", first.Execution.ID)
	require.NoError(t, err)
	spend, err := gw.Spend(ctx, "alice", toolgatetype.SpendFilter{})
	require.NoError(t, err)
	q, err := gw.Quote(ctx, "alice", "open-ticket")
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.StatusCompleted, got.Execution.Status)
	assert.JSONEq(t, `null`, string(got.Execution.Output), "nobody saw what the provider answered")
	assert.Equal(t, "0.0550", spend.TotalUSD, "charged once")
	require.Len(t, spend.Groups, 1)
	assert.EqualValues(t, 1, spend.Groups[0].Count)
	assert.Equal(t, "0.0550", q.Controls.Global.DailyUsedUSD, "the reservation became the charge, not a second one")
}

func TestResolveRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gw, _, clock := resolveEnv(t)
	first := ambiguousCall(t, gw, "k1")
	clock.Advance(time.Second) // the spend summary ends before now
	id := first.Execution.ID

	_, err := gw.ResolveExecution(ctx, "erin", id, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeExecutionNotFound)
	_, err = gw.ResolveExecution(ctx, "dana", "not-an-id", toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeExecutionNotFound)
	_, err = gw.ResolveExecution(ctx, "dana", id, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusAmbiguous})
	assert.Equal(t, "outcome", toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest).Parameter)
	_, err = gw.ResolveExecution(ctx, "dana", id, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed, Note: strings.Repeat("é", 1001)})
	assert.Equal(t, "note", toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest).Parameter)

	_, err = gw.ResolveExecution(ctx, "dana", id, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusCompleted, Note: strings.Repeat("é", 1000)})
	require.NoError(t, err)
	_, err = gw.ResolveExecution(ctx, "dana", id, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeExecutionAlreadyResolved)

	// One whose outcome was always known.
	done := toolgatetest.New(t, &toolgatetest.Options{Config: &toolgate.Config{Approvers: toolgatetype.StaticApprovers{Approvers: map[string][]string{"dana": {"alice"}}}}})
	res, err := done.CallApproved(t, "alice", "echo", `{"v":"hi"}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	_, err = done.Gateway.ResolveExecution(ctx, "dana", res.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeExecutionNotAmbiguous)
}

// The audit trail finds what is left to resolve.
func TestAmbiguousExecutionsAreListed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gw, _, clock := resolveEnv(t)
	first := ambiguousCall(t, gw, "k1")
	clock.Advance(time.Second) // the spend summary ends before now

	page, err := gw.ListApproverExecutions(ctx, "dana", toolgatetype.ExecutionFilter{Status: toolgatetype.StatusAmbiguous})
	require.NoError(t, err)
	require.Len(t, page.Executions, 1)
	assert.Equal(t, first.Execution.ID, page.Executions[0].ID)
	assert.Equal(t, toolgatetype.StatusAmbiguous, page.Executions[0].Status)

	_, err = gw.ResolveExecution(ctx, "dana", first.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed})
	require.NoError(t, err)
	page, err = gw.ListApproverExecutions(ctx, "dana", toolgatetype.ExecutionFilter{Status: toolgatetype.StatusAmbiguous})
	require.NoError(t, err)
	assert.Empty(t, page.Executions, "resolved: nothing left to resolve")
}

// An ambiguous call is seen: an execution.ambiguous event for the
// approvers, a metric outcome of its own and a warning in the log, which
// names the execution and never the input.
func TestAnAmbiguousCallIsSeenEverywhere(t *testing.T) {
	t.Parallel()
	p := newTicketProvider(t, 1000, false)
	notifier := &recordingNotifier{}
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	gw := ticketGatewayWith(t, p.srv.URL, false, func(c *toolgate.Config) {
		c.ApprovalNotifier = notifier
		c.Metrics = reg
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	res := ambiguousCall(t, gw, "k1")

	require.Len(t, notifier.events, 1)
	ev := notifier.events[0]
	assert.Equal(t, toolgatetype.ExecutionAmbiguous, ev.Type)
	require.NotNil(t, ev.Execution)
	assert.Equal(t, res.Execution.ID, ev.Execution.ID)
	assert.Equal(t, "alice", ev.Execution.Principal)
	assert.Equal(t, toolgatetype.StatusAmbiguous, ev.Execution.Status)

	assert.Equal(t, 1.0, counterValue(t, reg, "toolgate_calls_total", map[string]string{"tool": "open-ticket", "outcome": "ambiguous"}))
	assert.Equal(t, 0.0, counterValue(t, reg, "toolgate_calls_total", map[string]string{"tool": "open-ticket", "outcome": "failed"}))

	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		if m["execution"] == res.Execution.ID {
			line = m
		}
	}
	require.NotNil(t, line, "a log line for the call:\n%s", logs.String())
	assert.Equal(t, "WARN", line["level"])
	assert.Equal(t, "ambiguous", line["executionStatus"])
	assert.Equal(t, "outcome_unknown", line["errorCode"])
	assert.NotContains(t, logs.String(), "printer on fire", "never the input")
}

// counterValue is the value of the counter named name with exactly labels in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if assert.ObjectsAreEqual(labels, got) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}
