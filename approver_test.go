package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
)

// The people and agents of the approver-mode tests: agent's calls are
// approved by pat, a person; alice approves her own, as callers always
// have, though pat may approve for her too; sam approves for someone else.
var testApprovers = toolgate.StaticApprovers{
	Modes:     map[string]toolgate.ApprovalMode{"agent": toolgate.ApprovalModeApprover, "other": toolgate.ApprovalModeApprover},
	Approvers: map[string][]string{"pat": {"agent", "alice"}, "sam": {"other"}},
}

func withApprovers(c *toolgate.Config) { c.Approvers = testApprovers }

// newApproverEnv is an env whose principals and approvers are testApprovers.
func newApproverEnv(t *testing.T, specs []toolSpec, opts ...envOption) *env {
	t.Helper()
	return newEnv(t, specs, append([]envOption{withApprovers}, opts...)...)
}

// ask quotes tool for principal and requests approval of a call with v.
func (e *env) ask(principal, tool, v string) (*toolgate.QuoteResult, *toolgate.ApprovalRequest) {
	e.t.Helper()
	q := e.quote(principal, tool)
	r, err := e.gw.RequestApproval(context.Background(), principal, toolgate.ApprovalInput{
		QuoteID: q.Quote.ID, Input: json.RawMessage(fmt.Sprintf(`{"v":%q}`, v)),
	})
	require.NoError(e.t, err)
	return q, r
}

// approve has pat approve request id.
func (e *env) approve(id string, remember storage.ApprovalMode) *toolgate.ApprovalRequest {
	e.t.Helper()
	r, err := e.gw.DecideApproval(context.Background(), "pat", id, toolgate.Decision{Approve: true, Remember: remember})
	require.NoError(e.t, err)
	return r
}

// grantedCall is the call under q with v that grant approves, carrying
// the digest too, as section 14 asks of an agent.
func grantedCall(q *toolgate.QuoteResult, key, v, grant string) toolgate.CallRequest {
	req := approvedCall(q, key, v)
	req.ApprovalGrant = grant
	return req
}

func TestApproverModeCallRunsOnlyWithAnApproversGrant(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	ctx := context.Background()

	// The digest, which an agent can copy from its quote, approves nothing.
	q := e.quote("agent", "echo")
	_, err := e.gw.Call(ctx, "agent", approvedCall(q, "k1", "hi"))
	refused := requireCode(t, err, toolgate.CodeApprovalRequired)
	assert.True(t, refused.GrantRequired, "the refusal says a grant is what is missing")
	assert.Equal(t, toolgate.RequirementExplicitUnverified, refused.ApprovalRequirement)
	assert.Equal(t, q.Quote.ManifestDigest, refused.ManifestDigest)
	e.requireNoTrace("agent", "k1", q.Quote.ID)

	// The agent asks; the request waits for pat.
	r, err := e.gw.RequestApproval(ctx, "agent", toolgate.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{ "v" : "hi" }`)})
	require.NoError(t, err)
	assert.Equal(t, toolgate.ApprovalStatusPending, r.Status)
	assert.Equal(t, "agent", r.Principal)
	assert.Equal(t, q.Quote.ID, r.QuoteID)
	assert.Equal(t, q.Tool, r.Tool)
	assert.Equal(t, *q.Quote.ManifestDigest, r.ManifestDigest)
	assert.Equal(t, []string{q.Quote.PriceUSD, q.Quote.FeeUSD, q.Quote.TotalUSD}, []string{r.PriceUSD, r.FeeUSD, r.TotalUSD})
	assert.Equal(t, `{"v":"hi"}`, string(r.Input), "the input in canonical form")
	assert.Equal(t, "caf835d58af7ee521131ff93fd68980525724471f800028f7f76c3468dc8ba15", r.InputSHA256)
	assert.Equal(t, q.Quote.ExpiresAt, r.ExpiresAt, "it expires with its quote")
	assert.Equal(t, t0, r.CreatedAt)

	_, err = e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
	requireCode(t, err, toolgate.CodeApprovalPending)
	e.requireNoTrace("agent", "k1", q.Quote.ID)

	decided := e.approve(r.ID, "")
	assert.Equal(t, toolgate.ApprovalStatusApproved, decided.Status)
	assert.Equal(t, "pat", decided.DecidedBy)
	require.NotNil(t, decided.DecidedAt)

	res, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	e.upstream.RequireCalls(t, 1)
	used, err := e.gw.ApprovalRequest(ctx, "agent", r.ID)
	require.NoError(t, err)
	assert.Equal(t, toolgate.ApprovalStatusUsed, used.Status)
	assert.Equal(t, res.Execution.ID, used.ExecutionID)

	// A retry of the same call is answered from its record.
	again, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	assert.Equal(t, res.Body, again.Body)

	// The used grant approves nothing else: not another call of its quote,
	// not a call under a new quote.
	_, err = e.gw.Call(ctx, "agent", grantedCall(q, "k2", "hi", r.ID))
	requireCode(t, err, toolgate.CodeQuoteUsed)
	next := e.quote("agent", "echo")
	_, err = e.gw.Call(ctx, "agent", grantedCall(next, "k3", "hi", r.ID))
	requireCode(t, err, toolgate.CodeApprovalGrantMismatch)
	e.upstream.RequireCalls(t, 1)
}

func TestGrantForAnotherCallIsRefusedAndLeavesEverythingReusable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// call changes the approved call into the one actually sent.
		call func(e *env, q *toolgate.QuoteResult, req *toolgate.CallRequest)
		code toolgate.Code
	}{
		{"AnotherQuote", func(e *env, _ *toolgate.QuoteResult, req *toolgate.CallRequest) {
			req.QuoteID = e.quote("agent", "echo").Quote.ID
		}, toolgate.CodeApprovalGrantMismatch},
		{"AnotherInput", func(_ *env, _ *toolgate.QuoteResult, req *toolgate.CallRequest) {
			req.Input = json.RawMessage(`{"v":"something else"}`)
		}, toolgate.CodeApprovalGrantMismatch},
		{"AnotherTool", func(e *env, _ *toolgate.QuoteResult, req *toolgate.CallRequest) {
			other := e.quote("agent", "other-echo")
			req.Tool, req.QuoteID, req.ApprovalDigest = "other-echo", other.Quote.ID, *other.Quote.ManifestDigest
		}, toolgate.CodeApprovalGrantMismatch},
		{"AnotherDigest", func(_ *env, _ *toolgate.QuoteResult, req *toolgate.CallRequest) {
			req.ApprovalDigest = "sha256:" + fmt.Sprintf("%064d", 0)
		}, toolgate.CodeApprovalMismatch},
		{"AnotherPrincipalsGrant", func(e *env, _ *toolgate.QuoteResult, req *toolgate.CallRequest) {
			_, theirs := e.ask("alice", "echo", "hi")
			e.approve(theirs.ID, "")
			req.ApprovalGrant = theirs.ID
		}, toolgate.CodeApprovalRequestNotFound},
		{"NoSuchGrant", func(_ *env, _ *toolgate.QuoteResult, req *toolgate.CallRequest) {
			req.ApprovalGrant = uuid.NewString()
		}, toolgate.CodeApprovalRequestNotFound},
		{"NotAGrantID", func(_ *env, _ *toolgate.QuoteResult, req *toolgate.CallRequest) {
			req.ApprovalGrant = "pat-said-yes"
		}, toolgate.CodeInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newApproverEnv(t, []toolSpec{callable, {slug: "other-echo", immutable: true, capabilities: readOnly()}})
			q, r := e.ask("agent", "echo", "hi")
			e.approve(r.ID, "")
			req := grantedCall(q, "k1", "hi", r.ID)
			c.call(e, q, &req)

			_, err := e.gw.Call(context.Background(), "agent", req)
			requireCode(t, err, c.code)
			e.requireNoTrace("agent", "k1", req.QuoteID)
			grant, err := e.gw.ApprovalRequest(context.Background(), "agent", r.ID)
			require.NoError(t, err)
			assert.Equal(t, toolgate.ApprovalStatusApproved, grant.Status, "the grant is still there to use")

			// The key and the grant are reusable: the approved call goes through.
			res, err := e.gw.Call(context.Background(), "agent", grantedCall(q, "k1", "hi", r.ID))
			toolgatetest.RequireCompleted(t, res, err, "0.0000")
		})
	}
}

func TestGrantThatCannotApproveIsRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		decide func(e *env, id string)
		code   toolgate.Code
	}{
		{"Pending", func(*env, string) {}, toolgate.CodeApprovalPending},
		{"Denied", func(e *env, id string) {
			_, err := e.gw.DecideApproval(context.Background(), "pat", id, toolgate.Decision{})
			require.NoError(t, err)
		}, toolgate.CodeApprovalDenied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newApproverEnv(t, []toolSpec{callable})
			q, r := e.ask("agent", "echo", "hi")
			c.decide(e, r.ID)
			_, err := e.gw.Call(context.Background(), "agent", grantedCall(q, "k1", "hi", r.ID))
			requireCode(t, err, c.code)
			e.requireNoTrace("agent", "k1", q.Quote.ID)
		})
	}
}

func TestDecisionRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name     string
		approver string
		before   func(e *env, id string)
		decision toolgate.Decision
		code     toolgate.Code
	}{
		{"AlreadyApproved", "pat", func(e *env, id string) { e.approve(id, "") }, toolgate.Decision{}, toolgate.CodeApprovalAlreadyDecided},
		{"AlreadyDenied", "pat", func(e *env, id string) {
			_, err := e.gw.DecideApproval(ctx, "pat", id, toolgate.Decision{})
			require.NoError(t, err)
		}, toolgate.Decision{Approve: true}, toolgate.CodeApprovalAlreadyDecided},
		{"Expired", "pat", func(e *env, _ string) { e.clock.Advance(5 * time.Minute) }, toolgate.Decision{Approve: true}, toolgate.CodeApprovalExpired},
		{"ApproverOfOthers", "sam", nil, toolgate.Decision{Approve: true}, toolgate.CodeApprovalRequestNotFound},
		{"UnknownApprover", "mallory", nil, toolgate.Decision{Approve: true}, toolgate.CodeApprovalRequestNotFound},
		{"NoApprover", "", nil, toolgate.Decision{Approve: true}, toolgate.CodeApproverRequired},
		{"RememberEveryCallIsNotAChoice", "pat", nil, toolgate.Decision{Approve: true, Remember: storage.ApprovalFirstUse}, toolgate.CodeInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newApproverEnv(t, []toolSpec{callable})
			q, r := e.ask("agent", "echo", "hi")
			if c.before != nil {
				c.before(e, r.ID)
			}
			before, err := e.gw.ApprovalRequest(ctx, "agent", r.ID)
			require.NoError(t, err)
			_, err = e.gw.DecideApproval(ctx, c.approver, r.ID, c.decision)
			requireCode(t, err, c.code)
			after, err := e.gw.ApprovalRequest(ctx, "agent", r.ID)
			require.NoError(t, err)
			assert.Equal(t, before, after, "a refused decision changes nothing")
			_, err = e.store.GetApproval(ctx, "agent", q.Tool.ID)
			assert.ErrorIs(t, err, storage.ErrNotFound, "and remembers nothing")
		})
	}

	t.Run("ExpiredIsShownAsExpired", func(t *testing.T) {
		t.Parallel()
		e := newApproverEnv(t, []toolSpec{callable})
		_, pending := e.ask("agent", "echo", "hi")
		_, approved := e.ask("agent", "echo", "hi")
		e.approve(approved.ID, "")
		_, denied := e.ask("agent", "echo", "hi")
		_, err := e.gw.DecideApproval(ctx, "pat", denied.ID, toolgate.Decision{})
		require.NoError(t, err)
		e.clock.Advance(5 * time.Minute)
		for id, want := range map[string]toolgate.ApprovalStatus{
			pending.ID: toolgate.ApprovalStatusExpired, approved.ID: toolgate.ApprovalStatusExpired, denied.ID: toolgate.ApprovalStatusDenied,
		} {
			got, err := e.gw.ApprovalRequestFor(ctx, "pat", id)
			require.NoError(t, err)
			assert.Equal(t, want, got.Status)
		}
	})
}

func TestApprovalRequestIsSeenOnlyByItsCallerAndApprovers(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	ctx := context.Background()
	_, r := e.ask("agent", "echo", "hi")
	readers := []struct {
		name string
		read func() (*toolgate.ApprovalRequest, error)
		ok   bool
	}{
		{"TheCaller", func() (*toolgate.ApprovalRequest, error) { return e.gw.ApprovalRequest(ctx, "agent", r.ID) }, true},
		{"ItsApprover", func() (*toolgate.ApprovalRequest, error) { return e.gw.ApprovalRequestFor(ctx, "pat", r.ID) }, true},
		{"AnotherCaller", func() (*toolgate.ApprovalRequest, error) { return e.gw.ApprovalRequest(ctx, "alice", r.ID) }, false},
		{"AnotherApprover", func() (*toolgate.ApprovalRequest, error) { return e.gw.ApprovalRequestFor(ctx, "sam", r.ID) }, false},
		{"NotAnID", func() (*toolgate.ApprovalRequest, error) { return e.gw.ApprovalRequest(ctx, "agent", "../etc") }, false},
	}
	for _, rd := range readers {
		got, err := rd.read()
		if rd.ok {
			require.NoError(t, err, rd.name)
			assert.Equal(t, r.ID, got.ID, rd.name)
			continue
		}
		requireCode(t, err, toolgate.CodeApprovalRequestNotFound)
	}
}

func TestRequestApprovalChecksTheCallFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name  string
		input func(e *env) toolgate.ApprovalInput
		code  toolgate.Code
	}{
		{"InputAgainstTheSchema", func(e *env) toolgate.ApprovalInput {
			return toolgate.ApprovalInput{QuoteID: e.quote("agent", "echo").Quote.ID, Input: json.RawMessage(`{"v":"","extra":1}`)}
		}, toolgate.CodeInputInvalid},
		{"NoInput", func(e *env) toolgate.ApprovalInput {
			return toolgate.ApprovalInput{QuoteID: e.quote("agent", "echo").Quote.ID}
		}, toolgate.CodeInvalidRequest},
		{"InputNotJSON", func(e *env) toolgate.ApprovalInput {
			return toolgate.ApprovalInput{QuoteID: e.quote("agent", "echo").Quote.ID, Input: json.RawMessage(`{"v":`)}
		}, toolgate.CodeInvalidRequest},
		{"QuoteIDNotAnID", func(*env) toolgate.ApprovalInput {
			return toolgate.ApprovalInput{QuoteID: "q1", Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgate.CodeInvalidRequest},
		{"AnotherCallersQuote", func(e *env) toolgate.ApprovalInput {
			return toolgate.ApprovalInput{QuoteID: e.quote("alice", "echo").Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgate.CodeQuoteNotFound},
		{"ExpiredQuote", func(e *env) toolgate.ApprovalInput {
			q := e.quote("agent", "echo")
			e.clock.Advance(5 * time.Minute)
			return toolgate.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgate.CodeQuoteExpired},
		{"UsedQuote", func(e *env) toolgate.ApprovalInput {
			e.gw.SetApprovalFor(ctx, "pat", "agent", "echo", storage.ApprovalNeverAsk, e.digest("echo"))
			q := e.quote("agent", "echo")
			_, err := e.gw.Call(ctx, "agent", approvedCall(q, "used", "hi"))
			require.NoError(t, err)
			return toolgate.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgate.CodeQuoteUsed},
		{"BlockedTool", func(e *env) toolgate.ApprovalInput {
			return toolgate.ApprovalInput{QuoteID: e.quote("agent", "blocked").Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgate.CodeToolBlocked},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newApproverEnv(t, []toolSpec{callable, {slug: "blocked", capabilities: readOnly()}})
			_, err := e.gw.RequestApproval(ctx, "agent", c.input(e))
			refused := requireCode(t, err, c.code)
			if c.code == toolgate.CodeInputInvalid {
				assert.NotEmpty(t, refused.Details, "the input's failures are listed")
			}
			list, err := e.gw.ListApprovalRequests(ctx, "pat", toolgate.ApprovalListOptions{Status: toolgate.ApprovalStatusAll})
			require.NoError(t, err)
			assert.Empty(t, list.ApprovalRequests, "nothing reaches a person")
		})
	}
}

// digest is the current manifest digest of tool.
func (e *env) digest(tool string) string {
	e.t.Helper()
	v, err := e.reg.Lookup(tool)
	require.NoError(e.t, err)
	return v.Digest
}

func TestStandingApprovalsInApproverMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("OnlyAnApproverSetsThem", func(t *testing.T) {
		t.Parallel()
		e := newApproverEnv(t, []toolSpec{callable})
		_, err := e.gw.SetApproval(ctx, "agent", "echo", storage.ApprovalNeverAsk, e.digest("echo"))
		requireCode(t, err, toolgate.CodeApproverRequired)
		_, err = e.gw.SetApprovalFor(ctx, "sam", "agent", "echo", storage.ApprovalNeverAsk, e.digest("echo"))
		requireCode(t, err, toolgate.CodeNotFound)
		_, err = e.store.GetApproval(ctx, "agent", e.quote("agent", "echo").Tool.ID)
		assert.ErrorIs(t, err, storage.ErrNotFound)

		_, err = e.gw.SetApprovalFor(ctx, "pat", "agent", "echo", storage.ApprovalNeverAsk, e.digest("echo"))
		require.NoError(t, err)
		q := e.quote("agent", "echo")
		assert.Equal(t, toolgate.RequirementCoveredByUserPolicy, q.Policy.Approval.Requirement)
		req := approvedCall(q, "k1", "hi")
		req.ApprovalDigest = ""
		res, err := e.gw.Call(ctx, "agent", req)
		toolgatetest.RequireCompleted(t, res, err, "0.0000")

		list, err := e.gw.ApprovalsFor(ctx, "pat", "agent")
		require.NoError(t, err)
		require.Len(t, list, 1)
		_, err = e.gw.ApprovalsFor(ctx, "sam", "agent")
		requireCode(t, err, toolgate.CodeNotFound)
		require.NoError(t, e.gw.DeleteApprovalFor(ctx, "pat", "agent", "echo"))
		assert.Equal(t, toolgate.RequirementExplicitUnverified, e.quote("agent", "echo").Policy.Approval.Requirement)
	})

	t.Run("TheCallersOwnCountForNothing", func(t *testing.T) {
		t.Parallel()
		e := newApproverEnv(t, []toolSpec{callable})
		q := e.quote("agent", "echo")
		// Set while the principal was in caller mode, say.
		require.NoError(t, e.store.PutApproval(ctx, storage.Approval{Principal: "agent", ToolID: q.Tool.ID,
			ManifestDigest: e.digest("echo"), Mode: storage.ApprovalNeverAsk, UpdatedAt: t0}))
		q = e.quote("agent", "echo")
		assert.Equal(t, toolgate.RequirementExplicitUnverified, q.Policy.Approval.Requirement)
		_, err := e.gw.Call(ctx, "agent", approvedCall(q, "k1", "hi"))
		requireCode(t, err, toolgate.CodeApprovalRequired)
	})

	t.Run("ApproveWithRememberCoversTheNextCalls", func(t *testing.T) {
		t.Parallel()
		e := newApproverEnv(t, []toolSpec{callable})
		q, r := e.ask("agent", "echo", "hi")
		e.approve(r.ID, storage.ApprovalNeverAsk)
		res, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
		toolgatetest.RequireCompleted(t, res, err, "0.0000")

		next := e.quote("agent", "echo")
		assert.Equal(t, toolgate.RequirementCoveredByUserPolicy, next.Policy.Approval.Requirement)
		req := approvedCall(next, "k2", "another input")
		req.ApprovalDigest = ""
		res, err = e.gw.Call(ctx, "agent", req)
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
	})

	t.Run("FirstUseIsCoveredOnlyAfterAnApproverApprovedCall", func(t *testing.T) {
		t.Parallel()
		medium := readOnly()
		medium.OpenWorld = registry.Bool(true)
		e := newApproverEnv(t, []toolSpec{{slug: "fu", immutable: true, endpointVerified: true, capabilities: medium}})
		// A first use the caller approved, before its approver mode.
		q := e.quote("agent", "fu")
		require.NoError(t, e.store.PutApproval(ctx, storage.Approval{Principal: "agent", ToolID: q.Tool.ID,
			ManifestDigest: e.digest("fu"), Mode: storage.ApprovalFirstUse, UpdatedAt: t0}))
		q = e.quote("agent", "fu")
		assert.Equal(t, toolgate.RequirementFirstUse, q.Policy.Approval.Requirement)
		_, err := e.gw.Call(ctx, "agent", approvedCall(q, "k0", "hi"))
		requireCode(t, err, toolgate.CodeApprovalRequired)

		q, r := e.ask("agent", "fu", "hi")
		e.approve(r.ID, "")
		res, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
		remembered, err := e.store.GetApproval(ctx, "agent", q.Tool.ID)
		require.NoError(t, err)
		assert.Equal(t, "pat", remembered.ApprovedBy)

		next := e.quote("agent", "fu")
		assert.Equal(t, toolgate.RequirementCoveredByUserPolicy, next.Policy.Approval.Requirement)
		req := approvedCall(next, "k2", "again")
		req.ApprovalDigest = ""
		res, err = e.gw.Call(ctx, "agent", req)
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
	})
}

func TestCallerModeMayUseGrantsToo(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	q, r := e.ask("alice", "echo", "hi")
	e.approve(r.ID, "")
	req := grantedCall(q, "k1", "hi", r.ID)
	req.ApprovalDigest = "" // the grant is the approval
	res, err := e.gw.Call(context.Background(), "alice", req)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")

	// And the digest alone still approves a caller-mode call.
	res, err = e.gw.Call(context.Background(), "alice", approvedCall(e.quote("alice", "echo"), "k2", "hi"))
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
}

func TestRefusalLaterInAdmissionLeavesTheGrantUnused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := toolgate.StaticSpendControls{"agent": {RateLimitPerMinute: ptr(1)}}
	e := newApproverEnv(t, []toolSpec{callable}, func(c *toolgate.Config) { c.SpendControls = limits })
	q1, r1 := e.ask("agent", "echo", "one")
	e.approve(r1.ID, "")
	q2, r2 := e.ask("agent", "echo", "two")
	e.approve(r2.ID, "")

	res, err := e.gw.Call(ctx, "agent", grantedCall(q1, "k1", "one", r1.ID))
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	_, err = e.gw.Call(ctx, "agent", grantedCall(q2, "k2", "two", r2.ID))
	requireCode(t, err, toolgate.CodeRateLimited)
	grant, err := e.gw.ApprovalRequest(ctx, "agent", r2.ID)
	require.NoError(t, err)
	assert.Equal(t, toolgate.ApprovalStatusApproved, grant.Status, "the refused call did not use its grant")

	e.clock.Advance(time.Minute + time.Second)
	res, err = e.gw.Call(ctx, "agent", grantedCall(q2, "k2", "two", r2.ID))
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
}

func TestListApprovalRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newApproverEnv(t, []toolSpec{callable})
	var ids []string
	for i := range 5 {
		_, r := e.ask("agent", "echo", fmt.Sprint(i))
		ids = append(ids, r.ID)
		e.clock.Advance(time.Second)
	}
	e.ask("other", "echo", "not pat's")
	e.approve(ids[1], "")

	// Pending, newest first, two to a page.
	var got []string
	opts := toolgate.ApprovalListOptions{Limit: 2}
	for {
		page, err := e.gw.ListApprovalRequests(ctx, "pat", opts)
		require.NoError(t, err)
		for _, r := range page.ApprovalRequests {
			got = append(got, r.ID)
		}
		if page.NextCursor == nil {
			break
		}
		opts.Cursor = *page.NextCursor
	}
	assert.Equal(t, []string{ids[4], ids[3], ids[2], ids[0]}, got)

	byStatus := map[toolgate.ApprovalStatus][]string{
		toolgate.ApprovalStatusApproved: {ids[1]},
		toolgate.ApprovalStatusDenied:   nil,
		toolgate.ApprovalStatusAll:      {ids[4], ids[3], ids[2], ids[1], ids[0]},
	}
	for status, want := range byStatus {
		page, err := e.gw.ListApprovalRequests(ctx, "pat", toolgate.ApprovalListOptions{Status: status})
		require.NoError(t, err)
		var have []string
		for _, r := range page.ApprovalRequests {
			have = append(have, r.ID)
		}
		assert.Equal(t, want, have, status)
	}

	// Once they expire, they are no longer pending.
	e.clock.Advance(10 * time.Minute)
	page, err := e.gw.ListApprovalRequests(ctx, "pat", toolgate.ApprovalListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.ApprovalRequests)
	page, err = e.gw.ListApprovalRequests(ctx, "pat", toolgate.ApprovalListOptions{Status: toolgate.ApprovalStatusExpired})
	require.NoError(t, err)
	assert.Len(t, page.ApprovalRequests, 5)

	for _, c := range []struct {
		name     string
		approver string
		opts     toolgate.ApprovalListOptions
		code     toolgate.Code
	}{
		{"NoApprover", "", toolgate.ApprovalListOptions{}, toolgate.CodeApproverRequired},
		{"UnknownStatus", "pat", toolgate.ApprovalListOptions{Status: "maybe"}, toolgate.CodeInvalidRequest},
		{"ForgedCursor", "pat", toolgate.ApprovalListOptions{Cursor: "not-a-cursor"}, toolgate.CodeInvalidRequest},
		{"LimitTooLarge", "pat", toolgate.ApprovalListOptions{Limit: 101}, toolgate.CodeInvalidRequest},
	} {
		_, err := e.gw.ListApprovalRequests(ctx, c.approver, c.opts)
		requireCode(t, err, c.code)
	}
	none, err := e.gw.ListApprovalRequests(ctx, "mallory", toolgate.ApprovalListOptions{Status: toolgate.ApprovalStatusAll})
	require.NoError(t, err)
	assert.Empty(t, none.ApprovalRequests, "an approver of no one sees nothing")
}

// recordingNotifier keeps the approval events it is told of.
type recordingNotifier struct {
	mu     sync.Mutex
	events []toolgate.ApprovalEvent
}

func (n *recordingNotifier) NotifyApproval(_ context.Context, ev toolgate.ApprovalEvent) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, ev)
}

func TestApprovalEventsAreNotified(t *testing.T) {
	t.Parallel()
	n := &recordingNotifier{}
	e := newApproverEnv(t, []toolSpec{callable}, func(c *toolgate.Config) { c.ApprovalNotifier = n })
	_, r := e.ask("agent", "echo", "hi")
	e.clock.Advance(time.Second)
	decided := e.approve(r.ID, "")
	_, err := e.gw.DecideApproval(context.Background(), "pat", r.ID, toolgate.Decision{})
	requireCode(t, err, toolgate.CodeApprovalAlreadyDecided)

	require.Len(t, n.events, 2, "one event per change; a refused decision is none")
	assert.Equal(t, toolgate.ApprovalRequestCreated, n.events[0].Type)
	assert.Equal(t, t0, n.events[0].Timestamp)
	assert.Equal(t, *r, n.events[0].Request)
	assert.Equal(t, toolgate.ApprovalRequestDecided, n.events[1].Type)
	assert.Equal(t, t0.Add(time.Second), n.events[1].Timestamp)
	assert.Equal(t, *decided, n.events[1].Request)
}

func TestApprovalRequestsArePruned(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	_, r := e.ask("agent", "echo", "hi")
	e.clock.Advance(24*time.Hour + 5*time.Minute + time.Second)
	res, err := e.gw.Prune(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, res.ApprovalRequests)
	_, err = e.gw.ApprovalRequest(context.Background(), "agent", r.ID)
	requireCode(t, err, toolgate.CodeApprovalRequestNotFound)
}

func TestApproveRacesDeny(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	_, r := e.ask("agent", "echo", "hi")
	const n = 100
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = e.gw.DecideApproval(context.Background(), "pat", r.ID, toolgate.Decision{Approve: i%2 == 0})
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		requireCode(t, err, toolgate.CodeApprovalAlreadyDecided)
	}
	assert.Equal(t, 1, won, "exactly one decision wins")
}

func TestCallsRaceOnOneGrant(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	q, r := e.ask("agent", "echo", "hi")
	e.approve(r.ID, "")
	const n = 100
	results := make([]*toolgate.CallResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = e.gw.Call(context.Background(), "agent", grantedCall(q, fmt.Sprintf("k%d", i), "hi", r.ID))
		}()
	}
	close(start)
	wg.Wait()
	completed := 0
	for i, err := range errs {
		if err == nil {
			toolgatetest.RequireCompleted(t, results[i], err, "0.0000")
			completed++
			continue
		}
		requireCode(t, err, toolgate.CodeQuoteUsed)
	}
	assert.Equal(t, 1, completed, "one call proceeds")
	e.upstream.RequireCalls(t, 1)
}
