package toolgate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// toolCall is a ToolCallRequest of tool with {"v": v} under key.
func toolCall(tool, v, key string, approval *toolgatetype.CallerApproval) toolgatetype.ToolCallRequest {
	input, _ := json.Marshal(map[string]string{"v": v})
	return toolgatetype.ToolCallRequest{Tool: tool, Input: input, IdempotencyKey: key, Approval: approval}
}

// requireRefused asserts the outcome is a refusal with code.
func requireRefused(t *testing.T, out *toolgatetype.ToolCallOutcome, code toolgatetype.Code) *toolgatetype.Error {
	t.Helper()
	require.NotNil(t, out.Refusal, "want a refusal with %s, got %+v", code, out)
	assert.Nil(t, out.Result)
	assert.Nil(t, out.Approval)
	return requireCode(t, out.Refusal, code)
}

// requireWaits asserts the outcome is an approval the call lacks.
func requireWaits(t *testing.T, out *toolgatetype.ToolCallOutcome) *toolgatetype.ToolCallApproval {
	t.Helper()
	require.NotNil(t, out.Approval, "want an approval to ask for, got %+v (refusal %v)", out, out.Refusal)
	assert.Nil(t, out.Result)
	assert.Nil(t, out.Refusal)
	return out.Approval
}

// storedQuote reads quote id from the store.
func (e *env) storedQuote(id string) storage.Quote {
	e.t.Helper()
	q, err := e.store.GetQuote(context.Background(), uuid.MustParse(id))
	require.NoError(e.t, err)
	return q
}

// quotesMade counts the quotes a gateway reporting to reg made.
func quotesMade(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var n float64
	for _, f := range families {
		if f.GetName() == "toolgate_quotes_total" {
			for _, m := range f.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

func TestCallToolAsksTheCallerThenRunsUnderTheQuoteAsked(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEnv(t, []toolSpec{callable}, func(c *toolgate.Config) { c.Metrics = reg })
	ctx := context.Background()
	digest := e.digest("echo")

	// No approval: the caller is asked, under a quote made for the call.
	asked := requireWaits(t, e.gw.CallTool(ctx, "alice", toolCall("echo", "hi", "k1", nil)))
	assert.Equal(t, toolgatetype.ApprovalModeCaller, asked.Mode)
	assert.Equal(t, digest, asked.ManifestDigest)
	assert.Equal(t, "0.0000", asked.TotalUSD)
	assert.Equal(t, "echo", asked.Tool.Slug)
	assert.Equal(t, toolgatetype.RequirementExplicitUnverified, asked.Requirement)
	assert.Nil(t, asked.Request)
	assert.False(t, asked.Declined)
	e.requireNoTrace("alice", "k1", asked.QuoteID)
	assert.Equal(t, 1.0, quotesMade(t, reg))

	// Declined: nothing runs, and nothing more is quoted.
	declined := requireWaits(t, e.gw.CallTool(ctx, "alice", toolCall("echo", "hi", "k1", &toolgatetype.CallerApproval{Declined: true})))
	assert.True(t, declined.Declined)
	e.requireNoTrace("alice", "k1", asked.QuoteID)
	assert.Equal(t, 1.0, quotesMade(t, reg))

	// Approved, never to be asked again: it runs under the quote asked under.
	out := e.gw.CallTool(ctx, "alice", toolCall("echo", "hi", "k1", &toolgatetype.CallerApproval{
		QuoteID: asked.QuoteID, ManifestDigest: digest, Remember: toolgatetype.ApprovalNeverAsk,
	}))
	toolgatetest.RequireCompleted(t, out.Result, nil, "0.0000")
	assert.Equal(t, "k1", out.Result.IdempotencyKey)
	assert.Equal(t, 1.0, quotesMade(t, reg))
	used := e.storedQuote(asked.QuoteID)
	assert.Equal(t, storage.QuoteUsed, used.State)
	approvals, err := e.gw.Approvals(ctx, "alice")
	require.NoError(t, err)
	require.Len(t, approvals, 1)
	assert.Equal(t, toolgatetype.ApprovalNeverAsk, approvals[0].Mode)

	// Now covered: another call runs without asking.
	out = e.gw.CallTool(ctx, "alice", toolCall("echo", "again", "k2", nil))
	toolgatetest.RequireCompleted(t, out.Result, nil, "0.0000")
	e.upstream.RequireCalls(t, 2)

	// A digest given unasked is checked to be the current one.
	stale := &toolgatetype.CallerApproval{ManifestDigest: "sha256:" + strings.Repeat("0", 64)}
	requireRefused(t, e.gw.CallTool(ctx, "bob", toolCall("echo", "hi", "k3", stale)), toolgatetype.CodeApprovalMismatch)
	out = e.gw.CallTool(ctx, "bob", toolCall("echo", "hi", "k3", &toolgatetype.CallerApproval{ManifestDigest: digest}))
	toolgatetest.RequireCompleted(t, out.Result, nil, "0.0000")
	e.upstream.RequireCalls(t, 3)
}

// Nothing is quoted for a call that cannot run.
func TestCallToolRefusesBeforeQuoting(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEnv(t, []toolSpec{callable, {slug: "blocked"}}, func(c *toolgate.Config) { c.Metrics = reg })
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		principal string
		req       toolgatetype.ToolCallRequest
		code      toolgatetype.Code
	}{
		{"NoPrincipal", "", toolCall("echo", "hi", "k", nil), toolgatetype.CodeUnauthorized},
		{"NoKey", "alice", toolCall("echo", "hi", "", nil), toolgatetype.CodeIdempotencyKeyMissing},
		{"UnknownTool", "alice", toolCall("nope", "hi", "k", nil), toolgatetype.CodeToolNotFound},
		{"NoInput", "alice", toolgatetype.ToolCallRequest{Tool: "echo", IdempotencyKey: "k"}, toolgatetype.CodeInvalidRequest},
		{"NotJSON", "alice", toolgatetype.ToolCallRequest{Tool: "echo", Input: json.RawMessage(`{`), IdempotencyKey: "k"}, toolgatetype.CodeInvalidRequest},
		{"InputInvalid", "alice", toolCall("echo", "", "k", nil), toolgatetype.CodeInputInvalid},
	} {
		requireRefused(t, e.gw.CallTool(ctx, c.principal, c.req), c.code)
	}
	assert.Zero(t, quotesMade(t, reg))

	// Quoted, then refused when the quote says the call cannot run: the
	// quote is left to expire unused.
	blocked := requireRefused(t, e.gw.CallTool(ctx, "alice", toolCall("blocked", "hi", "k", nil)), toolgatetype.CodeToolBlocked)
	assert.Contains(t, blocked.Message, toolgatetype.ReasonNoImmutableVersion)
	require.NoError(t, e.gw.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{
		Tools: map[string]toolgatetype.ToolSpendControls{"echo": {Allowed: ptr(false)}},
	}))
	denied := requireRefused(t, e.gw.CallTool(ctx, "alice", toolCall("echo", "hi", "k", nil)), toolgatetype.CodeSpendLimitExceeded)
	assert.NotEmpty(t, denied.Violations)
	e.requireNoTrace("alice", "k", "")
}

func TestCallToolAnswersARetryFromItsKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable})
	ctx := context.Background()
	approved := &toolgatetype.CallerApproval{ManifestDigest: e.digest("echo")}
	req := toolCall("echo", "hi", "k1", approved)

	// While the call runs, the same call again is the same request, under
	// the first run's quote: its key is in use.
	release := make(chan struct{})
	reached := make(chan struct{})
	var first sync.Once
	next := e.upstream.Handler()
	e.upstream.HandleFunc(func(w http.ResponseWriter, r *http.Request) {
		first.Do(func() {
			close(reached)
			<-release
		})
		next.ServeHTTP(w, r)
	})
	done := make(chan *toolgatetype.ToolCallOutcome)
	go func() { done <- e.gw.CallTool(ctx, "alice", req) }()
	<-reached
	requireRefused(t, e.gw.CallTool(ctx, "alice", req), toolgatetype.CodeIdempotencyKeyInUse)
	close(release)
	ran := <-done
	toolgatetest.RequireCompleted(t, ran.Result, nil, "0.0000")

	// Finished: the stored result, even for a retry carrying no approval,
	// or an answer to an approval it was not asked for this time.
	answers := []*toolgatetype.CallerApproval{
		{QuoteID: uuid.NewString(), ManifestDigest: e.digest("echo")},
		{QuoteID: "not a quote", ManifestDigest: e.digest("echo")},
		{Declined: true},
	}
	retries := []toolgatetype.ToolCallRequest{req, toolCall("echo", "hi", "k1", nil)}
	for _, a := range answers {
		retries = append(retries, toolCall("echo", "hi", "k1", a))
	}
	for _, retry := range retries {
		again := e.gw.CallTool(ctx, "alice", retry)
		require.NotNil(t, again.Result)
		assert.True(t, again.Result.Replayed)
		assert.Equal(t, string(ran.Result.Body), string(again.Result.Body))
		assert.Equal(t, ran.Result.Execution.ID, again.Result.Execution.ID)
		assert.Equal(t, "k1", again.Result.IdempotencyKey)
	}

	// Keys are each principal's own.
	theirs := e.gw.CallTool(ctx, "bob", req)
	toolgatetest.RequireCompleted(t, theirs.Result, nil, "0.0000")
	assert.False(t, theirs.Result.Replayed)
	assert.NotEqual(t, ran.Result.Execution.ID, theirs.Result.Execution.ID)
	e.upstream.RequireCalls(t, 2)
}

// In approver mode the call's newest approval request decides, found by
// principal, tool and input in the store, on any gateway sharing it.
func TestCallToolFindsTheCallsNewestApprovalRequest(t *testing.T) {
	t.Parallel()
	store := memory.New()
	e := newEnvWithStore(t, store, []toolSpec{callable}, withApprovers)
	ctx := context.Background()

	// Asked: a pending request, which the caller's own approval does not change.
	first := requireWaits(t, e.gw.CallTool(ctx, "agent", toolCall("echo", "hi", "k1", &toolgatetype.CallerApproval{ManifestDigest: e.digest("echo")})))
	assert.Equal(t, toolgatetype.ApprovalModeApprover, first.Mode)
	require.NotNil(t, first.Request)
	r := first.Request
	assert.Equal(t, toolgatetype.ApprovalStatusPending, r.Status)
	assert.Equal(t, `{"v":"hi"}`, string(r.Input))
	assert.Nil(t, first.Expired)

	// The same input, however it is spaced or ordered, under another key:
	// the same request.
	e.clock.Advance(time.Second)
	spaced := toolgatetype.ToolCallRequest{Tool: "echo", Input: json.RawMessage("{ \"v\" :\n\"hi\" }"), IdempotencyKey: "k2"}
	assert.Equal(t, r.ID, requireWaits(t, e.gw.CallTool(ctx, "agent", spaced)).Request.ID)
	// Another gateway on the same store finds it: nothing lives in process memory.
	twin := newEnvWithStore(t, store, []toolSpec{callable}, withApprovers)
	twin.clock.Set(e.clock.Now())
	assert.Equal(t, r.ID, requireWaits(t, twin.gw.CallTool(ctx, "agent", spaced)).Request.ID)
	// Another input, or another principal: a request of its own.
	assert.NotEqual(t, r.ID, requireWaits(t, e.gw.CallTool(ctx, "agent", toolCall("echo", "another input", "k3", nil))).Request.ID)
	theirs := requireWaits(t, e.gw.CallTool(ctx, "other", toolCall("echo", "hi", "k1", nil))).Request
	assert.NotEqual(t, r.ID, theirs.ID)
	assert.Equal(t, "other", theirs.Principal)
	e.upstream.RequireCalls(t, 0)

	// Approved: the call runs with the grant, under the request's quote.
	e.approve(r.ID, "")
	out := e.gw.CallTool(ctx, "agent", toolCall("echo", "hi", "k4", nil))
	toolgatetest.RequireCompleted(t, out.Result, nil, "0.0000")
	used, err := e.gw.ApprovalRequest(ctx, "agent", r.ID)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusUsed, used.Status)
	assert.Equal(t, out.Result.Execution.ID, used.ExecutionID)
	assert.Equal(t, storage.QuoteUsed, e.storedQuote(r.QuoteID).State)

	// The grant served that call: the same call made anew asks again.
	second := requireWaits(t, e.gw.CallTool(ctx, "agent", toolCall("echo", "hi", "k5", nil))).Request
	assert.NotEqual(t, r.ID, second.ID)

	// Denied: the same answer until the request would have expired, then asked anew.
	_, err = e.gw.DecideApproval(ctx, "pat", second.ID, toolgatetype.Decision{Approve: false})
	require.NoError(t, err)
	denied := requireWaits(t, e.gw.CallTool(ctx, "agent", toolCall("echo", "hi", "k6", nil))).Request
	assert.Equal(t, second.ID, denied.ID)
	assert.Equal(t, toolgatetype.ApprovalStatusDenied, denied.Status)
	e.clock.Set(denied.ExpiresAt)
	third := requireWaits(t, e.gw.CallTool(ctx, "agent", toolCall("echo", "hi", "k6", nil)))
	assert.NotEqual(t, second.ID, third.Request.ID)
	assert.Nil(t, third.Expired, "a denied request did not expire unused")

	// Approved but expired unused: asked anew, naming the one that expired.
	e.approve(third.Request.ID, "")
	e.clock.Set(third.Request.ExpiresAt)
	fourth := requireWaits(t, e.gw.CallTool(ctx, "agent", toolCall("echo", "hi", "k7", nil)))
	assert.NotEqual(t, third.Request.ID, fourth.Request.ID)
	require.NotNil(t, fourth.Expired)
	assert.Equal(t, third.Request.ID, fourth.Expired.ID)
	assert.Equal(t, toolgatetype.ApprovalStatusExpired, fourth.Expired.Status)
	e.upstream.RequireCalls(t, 1)
}

// A grant found approved that can no longer be used when the call is made
// is said so, with its id: a grant serves one call.
func TestCallToolSaysWhichGrantLapsed(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	ctx := context.Background()
	r := requireWaits(t, e.gw.CallTool(ctx, "agent", toolCall("echo", "hi", "k1", nil))).Request
	e.approve(r.ID, "")

	// The request's quote is used by another call, which pat's standing
	// approval covered while it lasted.
	_, err := e.gw.SetApprovalFor(ctx, "pat", "agent", "echo", toolgatetype.ApprovalNeverAsk, e.digest("echo"))
	require.NoError(t, err)
	q := &toolgatetype.QuoteResult{Quote: toolgatetype.QuoteInfo{ID: r.QuoteID}, Tool: r.Tool}
	res, err := e.gw.Call(ctx, "agent", approvedCall(q, "elsewhere", "hi"))
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	require.NoError(t, e.gw.DeleteApprovalFor(ctx, "pat", "agent", "echo"))

	out := e.gw.CallTool(ctx, "agent", toolCall("echo", "hi", "k1", nil))
	requireRefused(t, out, toolgatetype.CodeQuoteUsed)
	assert.Equal(t, r.ID, out.LapsedGrant)
	e.upstream.RequireCalls(t, 1)
}
