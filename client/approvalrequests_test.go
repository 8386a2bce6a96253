package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// meteredTool is a paid, verified tool that sends messages: callable,
// charged, and each call needs approval (per_call).
func meteredTool() *registry.Tool {
	t := toolgatetest.Priced(toolgatetest.EchoTool(), "0.1000")
	t.Slug, t.Name = "metered", "Echo metered"
	t.Capabilities.SendsMessages = registry.Bool(true)
	return t
}

func withMetered() *envOptions {
	return &envOptions{tools: append(testTools(), meteredTool())}
}

// An agent in approver mode asks over the client; the request it gets is
// the gateway's, with where a person decides it.
func TestRequestApproval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMetered())
	agent := e.clientAs("agent", nil)
	ctx := context.Background()

	q, err := agent.Quote(ctx, "metered")
	require.NoError(t, err)
	require.Equal(t, toolgatetype.RequirementPerCall, q.Policy.Approval.Requirement)
	// The digest copied from the quote approves nothing: the error says a
	// grant is what the call lacks.
	_, err = agent.Call(ctx, approved(q, "hello"))
	assert.True(t, toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequired).GrantRequired)

	ar, err := agent.RequestApproval(ctx, toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{ "v": "hello" }`)})
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusPending, ar.Status)
	assert.Equal(t, "agent", ar.Principal)
	assert.Equal(t, q.Quote.ID, ar.QuoteID)
	assert.Equal(t, "metered", ar.Tool.Slug)
	assert.Equal(t, *q.Quote.ManifestDigest, ar.ManifestDigest)
	assert.Equal(t, []string{"0.1000", "0.0100", "0.1100"}, []string{ar.PriceUSD, ar.FeeUSD, ar.TotalUSD})
	assert.JSONEq(t, `{"v":"hello"}`, string(ar.Input))
	assert.True(t, strings.HasSuffix(ar.ApproveURL, httpapi.ApprovalPagePath(ar.ID)), ar.ApproveURL)

	// As the gateway keeps it, read by the caller and by its approver.
	inProcess, err := e.gw.ApprovalRequest(ctx, "agent", ar.ID)
	require.NoError(t, err)
	inProcess.ApproveURL = ar.ApproveURL // the HTTP layer's to fill in
	assert.Equal(t, inProcess, ar)
	for _, who := range []string{"agent", "pat"} {
		got, err := e.clientAs(who, nil).ApprovalRequest(ctx, ar.ID)
		require.NoError(t, err, who)
		assert.Equal(t, ar, got, who)
	}

	// The input is checked before a person is asked; the request is not
	// made when it could not run.
	_, err = agent.RequestApproval(ctx, toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":""}`)})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeInputInvalid)
	_, err = agent.RequestApproval(ctx, toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":`)})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest)
	assertPending(t, e, ar.ID)
}

// The whole flow over the client: ask, wait while a person approves from
// elsewhere, call with the grant through a network that loses the call's
// answer twice, and find the grant used once, by the one execution.
func TestApprovedCallRunsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMetered())
	agent, pat := e.clientAs("agent", nil), e.clientAs("pat", nil)
	ctx := context.Background()

	q, err := agent.Quote(ctx, "metered")
	require.NoError(t, err)
	req := approved(q, "hello")
	ar, err := agent.RequestApproval(ctx, toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: req.Input})
	require.NoError(t, err)

	// The person decides while the agent waits: after the agent's first
	// read found the request pending, before its next.
	polled, decided := make(chan struct{}), make(chan error, 1)
	go func() {
		<-polled
		_, err := pat.Approve(ctx, ar.ID, "")
		decided <- err
	}()
	e.onWait = func(context.Context, time.Duration) error {
		if len(e.recordedWaits()) == 1 {
			close(polled)
			return <-decided
		}
		return nil
	}
	got, err := agent.WaitForDecision(ctx, ar.ID)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusApproved, got.Status)
	assert.Equal(t, "pat", got.DecidedBy)
	require.NotNil(t, got.DecidedAt)
	waits := e.recordedWaits()
	require.Len(t, waits, 1, "one wait between the read that found it pending and the one that found it approved")
	assert.LessOrEqual(t, waits[0], DefaultRetryWaitMin)

	// The call's answer is lost twice after the gateway ran it.
	req.ApprovalGrant = got.ID
	e.proxy.inject(dropAnswer, dropAnswer)
	before := len(e.proxy.requests())
	res, err := agent.Call(ctx, req)
	toolgatetest.RequireCompleted(t, res, err, "0.1100")
	assert.True(t, res.Replayed)
	calls := e.proxy.requests()[before:]
	require.Len(t, calls, 3)
	for _, s := range calls {
		assert.Equal(t, calls[0].body, s.body, "the same body, grant included")
		assert.Equal(t, res.IdempotencyKey, s.idempotencyKey)
	}
	e.gw.Upstream.RequireCalls(t, 1)
	e.gw.RequireSpent(t, "agent", "0.1100")
	usage, err := e.gw.Store.Usage(ctx, q.Tool.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 1, usage.Count, "one execution")
	used, err := agent.ApprovalRequest(ctx, ar.ID)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusUsed, used.Status)
	assert.Equal(t, res.Execution.ID, used.ExecutionID, "the grant used by that execution")

	// Used once, the grant approves no other call, over the client as in
	// process.
	req.IdempotencyKey = "another-call"
	_, remote := agent.Call(ctx, req)
	req.IdempotencyKey = "yet-another-call"
	_, local := e.gw.For("agent").Call(ctx, req)
	want := toolgatetest.RequireCode(t, local, toolgatetype.CodeQuoteUsed)
	assert.Equal(t, want, toolgatetest.RequireCode(t, remote, toolgatetype.CodeQuoteUsed))
	e.gw.Upstream.RequireCalls(t, 1)

	// The approver's key went only where it belongs.
	for _, s := range e.proxy.requests() {
		assert.NotContains(t, s.path, patKey)
		assert.NotContains(t, string(s.body), patKey)
	}
}

// A caller key decides nothing: approving, denying and listing are for
// approvers, and an approver key makes no calls.
func TestAgentKeyCannotApprove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	agent, pat := e.clientAs("agent", &Options{MaxAttempts: 1}), e.clientAs("pat", &Options{MaxAttempts: 1})
	ctx := context.Background()
	ar, _ := e.askApproval("echo", "x")

	_, err := agent.Approve(ctx, ar.ID, toolgatetype.ApprovalNeverAsk)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApproverRequired)
	_, err = agent.Deny(ctx, ar.ID)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApproverRequired)
	for r, err := range agent.ApprovalRequests(ctx, "") {
		assert.Nil(t, r)
		toolgatetest.RequireCode(t, err, toolgatetype.CodeApproverRequired)
	}
	assertPending(t, e, ar.ID)

	_, err = pat.Quote(ctx, "echo")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeCallerKeyRequired)
	_, err = pat.RequestApproval(ctx, toolgatetype.ApprovalInput{QuoteID: ar.QuoteID, Input: ar.Input})
	toolgatetest.RequireCode(t, err, toolgatetype.CodeCallerKeyRequired)
	// An approver of other principals cannot learn of the request.
	_, err = e.clientAs("sam", nil).Approve(ctx, ar.ID, "")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequestNotFound)
	assertPending(t, e, ar.ID)
}

// A denial is an answer: the wait returns it, and the grant approves
// nothing.
func TestDeny(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	agent, pat := e.clientAs("agent", nil), e.clientAs("pat", nil)
	ctx := context.Background()
	ar, req := e.askApproval("echo", "x")

	denied, err := pat.Deny(ctx, ar.ID)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusDenied, denied.Status)
	assert.Equal(t, "pat", denied.DecidedBy)

	got, err := agent.WaitForDecision(ctx, ar.ID)
	require.NoError(t, err)
	assert.Equal(t, denied, got)
	assert.Empty(t, e.recordedWaits(), "decided already: no wait")

	_, err = agent.Call(ctx, req)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalDenied)
	_, err = pat.Approve(ctx, ar.ID, "")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalAlreadyDecided)
	e.gw.Upstream.RequireCalls(t, 0)
}

// Approving with remember also records the standing approval, so the
// principal's next calls of that version need no request.
func TestApproveAndRemember(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	agent, pat := e.clientAs("agent", nil), e.clientAs("pat", nil)
	ctx := context.Background()
	ar, _ := e.askApproval("echo", "x")

	decided, err := pat.Approve(ctx, ar.ID, toolgatetype.ApprovalNeverAsk)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusApproved, decided.Status)
	assert.Equal(t, toolgatetype.ApprovalNeverAsk, decided.Remember)

	list, err := agent.Approvals(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, toolgatetype.ApprovalNeverAsk, list[0].Mode)
	assert.Equal(t, ar.ManifestDigest, list[0].ManifestDigest)
	q, err := agent.Quote(ctx, "echo")
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, q.Policy.Approval.Requirement)

	_, err = pat.Approve(ctx, ar.ID, "sometimes")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest)
	_, err = pat.Approve(ctx, ar.ID, toolgatetype.ApprovalAskChargedCalls)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalAlreadyDecided)
}

// The wait polls with the retry waits, growing and capped.
func TestWaitForDecisionPollsWithBackoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ar, _ := e.askApproval("echo", "x")
	e.onWait = func(context.Context, time.Duration) error {
		if len(e.recordedWaits()) == 5 {
			e.decide(ar.ID, true)
		}
		return nil
	}
	min, max := time.Second, 4*time.Second
	got, err := e.clientAs("agent", &Options{RetryWaitMin: min, RetryWaitMax: max}).WaitForDecision(context.Background(), ar.ID)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusApproved, got.Status)
	waits := e.recordedWaits()
	require.Len(t, waits, 5)
	for i, upTo := range []time.Duration{min, 2 * min, max, max, max} {
		assert.GreaterOrEqual(t, waits[i], upTo/2, "wait %d", i)
		assert.LessOrEqual(t, waits[i], upTo, "wait %d", i)
	}
	assert.Len(t, e.proxy.requests(), 6, "one read after each wait, and the first")
}

// The wait ends with its context, and never waits past its deadline.
func TestWaitForDecisionEnds(t *testing.T) {
	t.Parallel()
	hour := func(time.Duration, time.Duration, int, *http.Response) time.Duration { return time.Hour }

	t.Run("a poll that would come after the deadline is not waited for", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		ar, _ := e.askApproval("echo", "x")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		got, err := e.clientAs("agent", &Options{Backoff: hour}).WaitForDecision(ctx, ar.ID)
		assert.Nil(t, got)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), ar.ID+" was still pending")
		assert.NoError(t, ctx.Err(), "it returned at once")
		assert.Empty(t, e.recordedWaits())
		assert.Len(t, e.proxy.requests(), 1)
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		ar, _ := e.askApproval("echo", "x")
		ctx, cancel := context.WithCancel(context.Background())
		e.onWait = func(ctx context.Context, _ time.Duration) error {
			cancel()
			return ctx.Err()
		}
		got, err := e.clientAs("agent", nil).WaitForDecision(ctx, ar.ID)
		assert.Nil(t, got)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Len(t, e.proxy.requests(), 1)
	})
	t.Run("the deadline passing during a poll", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		ar, _ := e.askApproval("echo", "x")
		e.proxy.inject(hang)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := e.clientAs("agent", nil).WaitForDecision(ctx, ar.ID)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var te *TransportError
		assert.ErrorAs(t, err, &te)
		assert.Len(t, e.proxy.requests(), 1)
	})
	t.Run("nobody decided before the request expired", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		ar, _ := e.askApproval("echo", "x")
		e.onWait = func(context.Context, time.Duration) error {
			e.gw.Clock.Advance(toolgate.DefaultApprovalTTL)
			return nil
		}
		got, err := e.clientAs("agent", nil).WaitForDecision(context.Background(), ar.ID)
		require.NoError(t, err, "an expired request is an answer")
		assert.Equal(t, toolgatetype.ApprovalStatusExpired, got.Status)
		assert.Len(t, e.recordedWaits(), 1)
	})
	t.Run("a request that is not there", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, nil)
		ar, _ := e.askApproval("echo", "x")
		_, err := e.clientAs("alice", nil).WaitForDecision(context.Background(), ar.ID)
		toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequestNotFound)
		assert.Empty(t, e.recordedWaits())
	})
}

// An approver's listing follows the gateway's cursors, newest first, with
// the status asked for, and shows only the approver's principals.
func TestApprovalRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		ar, _ := e.askApproval("echo", fmt.Sprint(i))
		ids = append(ids, ar.ID)
		e.gw.Clock.Advance(time.Second) // an order of creation to list by
	}
	e.decide(ids[1], true)
	e.decide(ids[3], false)
	pat := e.clientAs("pat", &Options{PageSize: 2})

	list := func(c *Client, status toolgatetype.ApprovalStatus) []string {
		t.Helper()
		var got []string
		for r, err := range c.ApprovalRequests(ctx, status) {
			require.NoError(t, err)
			assert.Equal(t, "agent", r.Principal)
			assert.True(t, strings.HasSuffix(r.ApproveURL, httpapi.ApprovalPagePath(r.ID)), r.ApproveURL)
			got = append(got, r.ID)
		}
		return got
	}
	before := len(e.proxy.requests())
	assert.Equal(t, []string{ids[4], ids[2], ids[0]}, list(pat, ""), "pending by default, newest first")
	assert.Len(t, e.proxy.requests(), before+2, "pages of 2 and 1")
	assert.Equal(t, []string{ids[4], ids[2], ids[0]}, list(pat, toolgatetype.ApprovalStatusPending))
	assert.Equal(t, []string{ids[1]}, list(pat, toolgatetype.ApprovalStatusApproved))
	assert.Equal(t, []string{ids[3]}, list(pat, toolgatetype.ApprovalStatusDenied))
	assert.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, list(pat, toolgatetype.ApprovalStatusAll))
	assert.Empty(t, list(e.clientAs("sam", nil), toolgatetype.ApprovalStatusAll), "sam approves for no one here")

	before = len(e.proxy.requests())
	for range pat.ApprovalRequests(ctx, toolgatetype.ApprovalStatusAll) {
		break
	}
	assert.Len(t, e.proxy.requests(), before+1, "no page is fetched that the loop did not reach")

	var errs []error
	for _, err := range pat.ApprovalRequests(ctx, "sometimes") {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	toolgatetest.RequireCode(t, errs[0], toolgatetype.CodeInvalidRequest)
}

// Ids that would name another route are refused before anything is sent,
// as the gateway refuses an id it does not know.
func TestApprovalRequestIDsRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	pat := e.clientAs("pat", nil)
	ctx := context.Background()
	for _, id := range []string{"", ".", ".."} {
		_, remote := pat.ApprovalRequest(ctx, id)
		_, local := e.gw.ApprovalRequestFor(ctx, "pat", id)
		assert.Equal(t, toolgatetest.RequireCode(t, local, toolgatetype.CodeApprovalRequestNotFound),
			toolgatetest.RequireCode(t, remote, toolgatetype.CodeApprovalRequestNotFound), "%q", id)
		_, err := pat.Approve(ctx, id, "")
		toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequestNotFound)
		_, err = pat.Deny(ctx, id)
		toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequestNotFound)
	}
	assert.Empty(t, e.proxy.requests())
}

// assertPending checks in process that request id is still undecided.
func assertPending(t *testing.T, e *env, id string) {
	t.Helper()
	r, err := e.gw.ApprovalRequestFor(context.Background(), "pat", id)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusPending, r.Status)
	assert.Empty(t, r.DecidedBy)
}
