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
	"github.com/toolgate/toolgate/toolgatetype"
)

// The people and agents of the approver-mode tests: agent's calls are
// approved by pat, a person; alice approves her own, as callers always
// have, though pat may approve for her too; sam approves for someone else.
var testApprovers = toolgatetype.StaticApprovers{
	Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover, "other": toolgatetype.ApprovalModeApprover},
	Approvers: map[string][]string{"pat": {"agent", "alice"}, "sam": {"other"}},
}

func withApprovers(c *toolgate.Config) { c.Approvers = testApprovers }

// newApproverEnv is an env whose principals and approvers are testApprovers.
func newApproverEnv(t *testing.T, specs []toolSpec, opts ...envOption) *env {
	t.Helper()
	return newEnv(t, specs, append([]envOption{withApprovers}, opts...)...)
}

// ask quotes tool for principal and requests approval of a call with v.
func (e *env) ask(principal, tool, v string) (*toolgatetype.QuoteResult, *toolgatetype.ApprovalRequest) {
	e.t.Helper()
	q := e.quote(principal, tool)
	r, err := e.gw.RequestApproval(context.Background(), principal, toolgatetype.ApprovalInput{
		QuoteID: q.Quote.ID, Input: json.RawMessage(fmt.Sprintf(`{"v":%q}`, v)),
	})
	require.NoError(e.t, err)
	return q, r
}

// approve has pat approve request id.
func (e *env) approve(id string, remember toolgatetype.StandingMode) *toolgatetype.ApprovalRequest {
	e.t.Helper()
	r, err := e.gw.DecideApproval(context.Background(), "pat", id, toolgatetype.Decision{Approve: true, Remember: remember})
	require.NoError(e.t, err)
	return r
}

// grantedCall is the call under q with v that grant approves, carrying
// the digest too, as an agent in approver mode is asked to.
func grantedCall(q *toolgatetype.QuoteResult, key, v, grant string) toolgatetype.CallRequest {
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
	refused := requireCode(t, err, toolgatetype.CodeApprovalRequired)
	assert.True(t, refused.GrantRequired, "the refusal says a grant is what is missing")
	assert.Equal(t, toolgatetype.RequirementExplicitUnverified, refused.ApprovalRequirement)
	assert.Equal(t, q.Quote.ManifestDigest, refused.ManifestDigest)
	e.requireNoTrace("agent", "k1", q.Quote.ID)

	// The agent asks; the request waits for pat.
	r, err := e.gw.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{ "v" : "hi" }`)})
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusPending, r.Status)
	assert.Equal(t, "agent", r.Principal)
	assert.Equal(t, q.Quote.ID, r.QuoteID)
	assert.Equal(t, q.Tool, r.Tool)
	assert.Equal(t, *q.Quote.ManifestDigest, r.ManifestDigest)
	assert.Equal(t, []string{q.Quote.PriceUSD, q.Quote.FeeUSD, q.Quote.TotalUSD}, []string{r.PriceUSD, r.FeeUSD, r.TotalUSD})
	assert.Equal(t, `{"v":"hi"}`, string(r.Input), "the input in canonical form")
	assert.Equal(t, "caf835d58af7ee521131ff93fd68980525724471f800028f7f76c3468dc8ba15", r.InputSHA256)
	assert.Equal(t, t0.Add(toolgate.DefaultApprovalTTL), r.ExpiresAt, "it lives the approval TTL")
	assert.Equal(t, t0, r.CreatedAt)

	_, err = e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
	requireCode(t, err, toolgatetype.CodeApprovalPending)
	e.requireNoTrace("agent", "k1", q.Quote.ID)

	decided := e.approve(r.ID, "")
	assert.Equal(t, toolgatetype.ApprovalStatusApproved, decided.Status)
	assert.Equal(t, "pat", decided.DecidedBy)
	require.NotNil(t, decided.DecidedAt)

	res, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	e.upstream.RequireCalls(t, 1)
	used, err := e.gw.ApprovalRequest(ctx, "agent", r.ID)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusUsed, used.Status)
	assert.Equal(t, res.Execution.ID, used.ExecutionID)

	// A retry of the same call is answered from its record.
	again, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	assert.Equal(t, res.Body, again.Body)

	// The used grant approves nothing else: not another call of its quote,
	// not a call under a new quote.
	_, err = e.gw.Call(ctx, "agent", grantedCall(q, "k2", "hi", r.ID))
	requireCode(t, err, toolgatetype.CodeQuoteUsed)
	next := e.quote("agent", "echo")
	_, err = e.gw.Call(ctx, "agent", grantedCall(next, "k3", "hi", r.ID))
	requireCode(t, err, toolgatetype.CodeApprovalGrantMismatch)
	e.upstream.RequireCalls(t, 1)
}

func TestGrantForAnotherCallIsRefusedAndLeavesEverythingReusable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// call changes the approved call into the one actually sent.
		call func(e *env, q *toolgatetype.QuoteResult, req *toolgatetype.CallRequest)
		code toolgatetype.Code
	}{
		{"AnotherQuote", func(e *env, _ *toolgatetype.QuoteResult, req *toolgatetype.CallRequest) {
			req.QuoteID = e.quote("agent", "echo").Quote.ID
		}, toolgatetype.CodeApprovalGrantMismatch},
		{"AnotherInput", func(_ *env, _ *toolgatetype.QuoteResult, req *toolgatetype.CallRequest) {
			req.Input = json.RawMessage(`{"v":"something else"}`)
		}, toolgatetype.CodeApprovalGrantMismatch},
		{"AnotherTool", func(e *env, _ *toolgatetype.QuoteResult, req *toolgatetype.CallRequest) {
			other := e.quote("agent", "other-echo")
			req.Tool, req.QuoteID, req.ApprovalDigest = "other-echo", other.Quote.ID, *other.Quote.ManifestDigest
		}, toolgatetype.CodeApprovalGrantMismatch},
		{"AnotherDigest", func(_ *env, _ *toolgatetype.QuoteResult, req *toolgatetype.CallRequest) {
			req.ApprovalDigest = "sha256:" + fmt.Sprintf("%064d", 0)
		}, toolgatetype.CodeApprovalMismatch},
		{"AnotherPrincipalsGrant", func(e *env, _ *toolgatetype.QuoteResult, req *toolgatetype.CallRequest) {
			_, theirs := e.ask("alice", "echo", "hi")
			e.approve(theirs.ID, "")
			req.ApprovalGrant = theirs.ID
		}, toolgatetype.CodeApprovalRequestNotFound},
		{"NoSuchGrant", func(_ *env, _ *toolgatetype.QuoteResult, req *toolgatetype.CallRequest) {
			req.ApprovalGrant = uuid.NewString()
		}, toolgatetype.CodeApprovalRequestNotFound},
		{"NotAGrantID", func(_ *env, _ *toolgatetype.QuoteResult, req *toolgatetype.CallRequest) {
			req.ApprovalGrant = "pat-said-yes"
		}, toolgatetype.CodeInvalidRequest},
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
			assert.Equal(t, toolgatetype.ApprovalStatusApproved, grant.Status, "the grant is still there to use")

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
		code   toolgatetype.Code
	}{
		{"Pending", func(*env, string) {}, toolgatetype.CodeApprovalPending},
		{"Denied", func(e *env, id string) {
			_, err := e.gw.DecideApproval(context.Background(), "pat", id, toolgatetype.Decision{})
			require.NoError(t, err)
		}, toolgatetype.CodeApprovalDenied},
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
		decision toolgatetype.Decision
		code     toolgatetype.Code
	}{
		{"AlreadyApproved", "pat", func(e *env, id string) { e.approve(id, "") }, toolgatetype.Decision{}, toolgatetype.CodeApprovalAlreadyDecided},
		{"AlreadyDenied", "pat", func(e *env, id string) {
			_, err := e.gw.DecideApproval(ctx, "pat", id, toolgatetype.Decision{})
			require.NoError(t, err)
		}, toolgatetype.Decision{Approve: true}, toolgatetype.CodeApprovalAlreadyDecided},
		{"Expired", "pat", func(e *env, _ string) { e.clock.Advance(toolgate.DefaultApprovalTTL) }, toolgatetype.Decision{Approve: true}, toolgatetype.CodeApprovalExpired},
		{"ApproverOfOthers", "sam", nil, toolgatetype.Decision{Approve: true}, toolgatetype.CodeApprovalRequestNotFound},
		{"UnknownApprover", "mallory", nil, toolgatetype.Decision{Approve: true}, toolgatetype.CodeApprovalRequestNotFound},
		{"NoApprover", "", nil, toolgatetype.Decision{Approve: true}, toolgatetype.CodeApproverRequired},
		{"RememberEveryCallIsNotAChoice", "pat", nil, toolgatetype.Decision{Approve: true, Remember: toolgatetype.ApprovalFirstUse}, toolgatetype.CodeInvalidRequest},
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
		_, err := e.gw.DecideApproval(ctx, "pat", denied.ID, toolgatetype.Decision{})
		require.NoError(t, err)
		e.clock.Advance(toolgate.DefaultApprovalTTL)
		for id, want := range map[string]toolgatetype.ApprovalStatus{
			pending.ID: toolgatetype.ApprovalStatusExpired, approved.ID: toolgatetype.ApprovalStatusExpired, denied.ID: toolgatetype.ApprovalStatusDenied,
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
		read func() (*toolgatetype.ApprovalRequest, error)
		ok   bool
	}{
		{"TheCaller", func() (*toolgatetype.ApprovalRequest, error) { return e.gw.ApprovalRequest(ctx, "agent", r.ID) }, true},
		{"ItsApprover", func() (*toolgatetype.ApprovalRequest, error) { return e.gw.ApprovalRequestFor(ctx, "pat", r.ID) }, true},
		{"AnotherCaller", func() (*toolgatetype.ApprovalRequest, error) { return e.gw.ApprovalRequest(ctx, "alice", r.ID) }, false},
		{"AnotherApprover", func() (*toolgatetype.ApprovalRequest, error) { return e.gw.ApprovalRequestFor(ctx, "sam", r.ID) }, false},
		{"NotAnID", func() (*toolgatetype.ApprovalRequest, error) { return e.gw.ApprovalRequest(ctx, "agent", "../etc") }, false},
	}
	for _, rd := range readers {
		got, err := rd.read()
		if rd.ok {
			require.NoError(t, err, rd.name)
			assert.Equal(t, r.ID, got.ID, rd.name)
			continue
		}
		requireCode(t, err, toolgatetype.CodeApprovalRequestNotFound)
	}
}

func TestRequestApprovalChecksTheCallFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name  string
		input func(e *env) toolgatetype.ApprovalInput
		code  toolgatetype.Code
	}{
		{"InputAgainstTheSchema", func(e *env) toolgatetype.ApprovalInput {
			return toolgatetype.ApprovalInput{QuoteID: e.quote("agent", "echo").Quote.ID, Input: json.RawMessage(`{"v":"","extra":1}`)}
		}, toolgatetype.CodeInputInvalid},
		{"NoInput", func(e *env) toolgatetype.ApprovalInput {
			return toolgatetype.ApprovalInput{QuoteID: e.quote("agent", "echo").Quote.ID}
		}, toolgatetype.CodeInvalidRequest},
		{"InputNotJSON", func(e *env) toolgatetype.ApprovalInput {
			return toolgatetype.ApprovalInput{QuoteID: e.quote("agent", "echo").Quote.ID, Input: json.RawMessage(`{"v":`)}
		}, toolgatetype.CodeInvalidRequest},
		{"QuoteIDNotAnID", func(*env) toolgatetype.ApprovalInput {
			return toolgatetype.ApprovalInput{QuoteID: "q1", Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgatetype.CodeInvalidRequest},
		{"AnotherCallersQuote", func(e *env) toolgatetype.ApprovalInput {
			return toolgatetype.ApprovalInput{QuoteID: e.quote("alice", "echo").Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgatetype.CodeQuoteNotFound},
		{"ExpiredQuote", func(e *env) toolgatetype.ApprovalInput {
			q := e.quote("agent", "echo")
			e.clock.Advance(5 * time.Minute)
			return toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgatetype.CodeQuoteExpired},
		{"UsedQuote", func(e *env) toolgatetype.ApprovalInput {
			e.gw.SetApprovalFor(ctx, "pat", "agent", "echo", toolgatetype.ApprovalNeverAsk, e.digest("echo"))
			q := e.quote("agent", "echo")
			_, err := e.gw.Call(ctx, "agent", approvedCall(q, "used", "hi"))
			require.NoError(t, err)
			return toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgatetype.CodeQuoteUsed},
		{"BlockedTool", func(e *env) toolgatetype.ApprovalInput {
			return toolgatetype.ApprovalInput{QuoteID: e.quote("agent", "blocked").Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)}
		}, toolgatetype.CodeToolBlocked},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newApproverEnv(t, []toolSpec{callable, {slug: "blocked", capabilities: readOnly()}})
			_, err := e.gw.RequestApproval(ctx, "agent", c.input(e))
			refused := requireCode(t, err, c.code)
			if c.code == toolgatetype.CodeInputInvalid {
				assert.NotEmpty(t, refused.Details, "the input's failures are listed")
			}
			list, err := e.gw.ListApprovalRequests(ctx, "pat", toolgatetype.ApprovalListOptions{Status: toolgatetype.ApprovalStatusAll})
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
		_, err := e.gw.SetApproval(ctx, "agent", "echo", toolgatetype.ApprovalNeverAsk, e.digest("echo"))
		requireCode(t, err, toolgatetype.CodeApproverRequired)
		_, err = e.gw.SetApprovalFor(ctx, "sam", "agent", "echo", toolgatetype.ApprovalNeverAsk, e.digest("echo"))
		requireCode(t, err, toolgatetype.CodeNotFound)
		_, err = e.store.GetApproval(ctx, "agent", e.quote("agent", "echo").Tool.ID)
		assert.ErrorIs(t, err, storage.ErrNotFound)

		_, err = e.gw.SetApprovalFor(ctx, "pat", "agent", "echo", toolgatetype.ApprovalNeverAsk, e.digest("echo"))
		require.NoError(t, err)
		q := e.quote("agent", "echo")
		assert.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, q.Policy.Approval.Requirement)
		req := approvedCall(q, "k1", "hi")
		req.ApprovalDigest = ""
		res, err := e.gw.Call(ctx, "agent", req)
		toolgatetest.RequireCompleted(t, res, err, "0.0000")

		list, err := e.gw.ApprovalsFor(ctx, "pat", "agent")
		require.NoError(t, err)
		require.Len(t, list, 1)
		_, err = e.gw.ApprovalsFor(ctx, "sam", "agent")
		requireCode(t, err, toolgatetype.CodeNotFound)
		require.NoError(t, e.gw.DeleteApprovalFor(ctx, "pat", "agent", "echo"))
		assert.Equal(t, toolgatetype.RequirementExplicitUnverified, e.quote("agent", "echo").Policy.Approval.Requirement)
	})

	t.Run("TheCallersOwnCountForNothing", func(t *testing.T) {
		t.Parallel()
		e := newApproverEnv(t, []toolSpec{callable})
		q := e.quote("agent", "echo")
		// Set while the principal was in caller mode, say.
		require.NoError(t, e.store.PutApproval(ctx, storage.Approval{Principal: "agent", ToolID: q.Tool.ID,
			ManifestDigest: e.digest("echo"), Mode: toolgatetype.ApprovalNeverAsk, UpdatedAt: t0}))
		q = e.quote("agent", "echo")
		assert.Equal(t, toolgatetype.RequirementExplicitUnverified, q.Policy.Approval.Requirement)
		_, err := e.gw.Call(ctx, "agent", approvedCall(q, "k1", "hi"))
		requireCode(t, err, toolgatetype.CodeApprovalRequired)
	})

	t.Run("ApproveWithRememberCoversTheNextCalls", func(t *testing.T) {
		t.Parallel()
		e := newApproverEnv(t, []toolSpec{callable})
		q, r := e.ask("agent", "echo", "hi")
		e.approve(r.ID, toolgatetype.ApprovalNeverAsk)
		res, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
		toolgatetest.RequireCompleted(t, res, err, "0.0000")

		next := e.quote("agent", "echo")
		assert.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, next.Policy.Approval.Requirement)
		req := approvedCall(next, "k2", "another input")
		req.ApprovalDigest = ""
		res, err = e.gw.Call(ctx, "agent", req)
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
	})

	t.Run("FirstUseIsCoveredOnlyOnceAnApproverChoseToRemember", func(t *testing.T) {
		t.Parallel()
		medium := readOnly()
		medium.OpenWorld = registry.Bool(true)
		e := newApproverEnv(t, []toolSpec{{slug: "fu", immutable: true, endpointVerified: true, capabilities: medium}})
		// A first use the caller approved, before its approver mode.
		q := e.quote("agent", "fu")
		require.NoError(t, e.store.PutApproval(ctx, storage.Approval{Principal: "agent", ToolID: q.Tool.ID,
			ManifestDigest: e.digest("fu"), Mode: toolgatetype.ApprovalFirstUse, UpdatedAt: t0}))
		q = e.quote("agent", "fu")
		assert.Equal(t, toolgatetype.RequirementFirstUse, q.Policy.Approval.Requirement)
		_, err := e.gw.Call(ctx, "agent", approvedCall(q, "k0", "hi"))
		requireCode(t, err, toolgatetype.CodeApprovalRequired)

		// Approved for this call only: it runs, and nothing more is approved.
		q, r := e.ask("agent", "fu", "hi")
		assert.Equal(t, toolgatetype.ApprovalOnce, e.approve(r.ID, "").Remember)
		res, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
		kept, err := e.store.GetApproval(ctx, "agent", q.Tool.ID)
		require.NoError(t, err)
		assert.Empty(t, kept.ApprovedBy, "no approver's standing approval was recorded")
		used, err := e.gw.ApprovalRequest(ctx, "agent", r.ID)
		require.NoError(t, err)
		assert.Equal(t, toolgatetype.ApprovalOnce, used.Remember)

		next := e.quote("agent", "fu")
		assert.Equal(t, toolgatetype.RequirementFirstUse, next.Policy.Approval.Requirement, "the next call asks again")
		req := approvedCall(next, "k2", "again")
		req.ApprovalDigest = ""
		_, err = e.gw.Call(ctx, "agent", req)
		requireCode(t, err, toolgatetype.CodeApprovalRequired)

		// Approved with "don't ask again for this version": later calls
		// of this version do not ask.
		q, r = e.ask("agent", "fu", "hi")
		assert.Equal(t, toolgatetype.ApprovalFirstUse, e.approve(r.ID, toolgatetype.ApprovalFirstUse).Remember)
		res, err = e.gw.Call(ctx, "agent", grantedCall(q, "k3", "hi", r.ID))
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
		remembered, err := e.store.GetApproval(ctx, "agent", q.Tool.ID)
		require.NoError(t, err)
		assert.Equal(t, "pat", remembered.ApprovedBy)
		assert.Equal(t, toolgatetype.ApprovalFirstUse, remembered.Mode)

		next = e.quote("agent", "fu")
		assert.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, next.Policy.Approval.Requirement)
		req = approvedCall(next, "k4", "another input")
		req.ApprovalDigest = ""
		res, err = e.gw.Call(ctx, "agent", req)
		toolgatetest.RequireCompleted(t, res, err, "0.0000")
	})

	t.Run("FirstUseIsNoChoiceForAnotherRequirement", func(t *testing.T) {
		t.Parallel()
		e := newApproverEnv(t, []toolSpec{callable})
		_, r := e.ask("agent", "echo", "hi")
		_, err := e.gw.DecideApproval(ctx, "pat", r.ID, toolgatetype.Decision{Approve: true, Remember: toolgatetype.ApprovalFirstUse})
		refused := requireCode(t, err, toolgatetype.CodeInvalidRequest)
		assert.Contains(t, refused.Message, "explicit_unverified")
		still, err := e.gw.ApprovalRequest(ctx, "agent", r.ID)
		require.NoError(t, err)
		assert.Equal(t, toolgatetype.ApprovalStatusPending, still.Status, "nothing was decided")
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
	limits := toolgatetype.StaticSpendControls{"agent": {RateLimitPerMinute: ptr(1)}}
	e := newApproverEnv(t, []toolSpec{callable}, func(c *toolgate.Config) { c.SpendControls = limits })
	q1, r1 := e.ask("agent", "echo", "one")
	e.approve(r1.ID, "")
	q2, r2 := e.ask("agent", "echo", "two")
	e.approve(r2.ID, "")

	res, err := e.gw.Call(ctx, "agent", grantedCall(q1, "k1", "one", r1.ID))
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
	_, err = e.gw.Call(ctx, "agent", grantedCall(q2, "k2", "two", r2.ID))
	requireCode(t, err, toolgatetype.CodeRateLimited)
	grant, err := e.gw.ApprovalRequest(ctx, "agent", r2.ID)
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalStatusApproved, grant.Status, "the refused call did not use its grant")

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
	opts := toolgatetype.ApprovalListOptions{Limit: 2}
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

	byStatus := map[toolgatetype.ApprovalStatus][]string{
		toolgatetype.ApprovalStatusApproved: {ids[1]},
		toolgatetype.ApprovalStatusDenied:   nil,
		toolgatetype.ApprovalStatusAll:      {ids[4], ids[3], ids[2], ids[1], ids[0]},
	}
	for status, want := range byStatus {
		page, err := e.gw.ListApprovalRequests(ctx, "pat", toolgatetype.ApprovalListOptions{Status: status})
		require.NoError(t, err)
		var have []string
		for _, r := range page.ApprovalRequests {
			have = append(have, r.ID)
		}
		assert.Equal(t, want, have, status)
	}

	// Once they expire, they are no longer pending.
	e.clock.Advance(toolgate.DefaultApprovalTTL)
	page, err := e.gw.ListApprovalRequests(ctx, "pat", toolgatetype.ApprovalListOptions{})
	require.NoError(t, err)
	assert.Empty(t, page.ApprovalRequests)
	page, err = e.gw.ListApprovalRequests(ctx, "pat", toolgatetype.ApprovalListOptions{Status: toolgatetype.ApprovalStatusExpired})
	require.NoError(t, err)
	assert.Len(t, page.ApprovalRequests, 5)

	for _, c := range []struct {
		name     string
		approver string
		opts     toolgatetype.ApprovalListOptions
		code     toolgatetype.Code
	}{
		{"NoApprover", "", toolgatetype.ApprovalListOptions{}, toolgatetype.CodeApproverRequired},
		{"UnknownStatus", "pat", toolgatetype.ApprovalListOptions{Status: "maybe"}, toolgatetype.CodeInvalidRequest},
		{"ForgedCursor", "pat", toolgatetype.ApprovalListOptions{Cursor: "not-a-cursor"}, toolgatetype.CodeInvalidRequest},
		{"LimitTooLarge", "pat", toolgatetype.ApprovalListOptions{Limit: 101}, toolgatetype.CodeInvalidRequest},
	} {
		_, err := e.gw.ListApprovalRequests(ctx, c.approver, c.opts)
		requireCode(t, err, c.code)
	}
	none, err := e.gw.ListApprovalRequests(ctx, "mallory", toolgatetype.ApprovalListOptions{Status: toolgatetype.ApprovalStatusAll})
	require.NoError(t, err)
	assert.Empty(t, none.ApprovalRequests, "an approver of no one sees nothing")
}

// recordingNotifier keeps the approval events it is told of.
type recordingNotifier struct {
	mu     sync.Mutex
	events []toolgatetype.ApprovalEvent
}

func (n *recordingNotifier) NotifyApproval(_ context.Context, ev toolgatetype.ApprovalEvent) {
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
	_, err := e.gw.DecideApproval(context.Background(), "pat", r.ID, toolgatetype.Decision{})
	requireCode(t, err, toolgatetype.CodeApprovalAlreadyDecided)

	require.Len(t, n.events, 2, "one event per change; a refused decision is none")
	assert.Equal(t, toolgatetype.ApprovalRequestCreated, n.events[0].Type)
	assert.Equal(t, t0, n.events[0].Timestamp)
	assert.Equal(t, *r, n.events[0].Request)
	assert.Equal(t, toolgatetype.ApprovalRequestDecided, n.events[1].Type)
	assert.Equal(t, t0.Add(time.Second), n.events[1].Timestamp)
	assert.Equal(t, *decided, n.events[1].Request)
}

func TestApprovalRequestsArePruned(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	_, r := e.ask("agent", "echo", "hi")
	e.clock.Advance(24*time.Hour + toolgate.DefaultApprovalTTL + time.Second)
	res, err := e.gw.Prune(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, res.ApprovalRequests)
	_, err = e.gw.ApprovalRequest(context.Background(), "agent", r.ID)
	requireCode(t, err, toolgatetype.CodeApprovalRequestNotFound)
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
			_, errs[i] = e.gw.DecideApproval(context.Background(), "pat", r.ID, toolgatetype.Decision{Approve: i%2 == 0})
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
		requireCode(t, err, toolgatetype.CodeApprovalAlreadyDecided)
	}
	assert.Equal(t, 1, won, "exactly one decision wins")
}

func TestCallsRaceOnOneGrant(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	q, r := e.ask("agent", "echo", "hi")
	e.approve(r.ID, "")
	const n = 100
	results := make([]*toolgatetype.CallResult, n)
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
		requireCode(t, err, toolgatetype.CodeQuoteUsed)
	}
	assert.Equal(t, 1, completed, "one call proceeds")
	e.upstream.RequireCalls(t, 1)
}

func TestApprovalModeComesFromTheDirectory(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	ctx := context.Background()
	for principal, want := range map[string]toolgatetype.ApprovalMode{
		"agent":  toolgatetype.ApprovalModeApprover,
		"alice":  toolgatetype.ApprovalModeCaller, // pat approves for her, but she is in caller mode
		"nobody": toolgatetype.ApprovalModeCaller,
	} {
		got, err := e.gw.ApprovalMode(ctx, principal)
		require.NoError(t, err)
		assert.Equal(t, want, got, principal)
	}
	_, err := e.gw.ApprovalMode(ctx, "")
	requireCode(t, err, toolgatetype.CodeUnauthorized)

	// A mode the directory made up loosens nothing.
	odd := newEnv(t, []toolSpec{callable}, func(c *toolgate.Config) {
		c.Approvers = toolgatetype.StaticApprovers{Modes: map[string]toolgatetype.ApprovalMode{"agent": "whoever"}}
	})
	got, err := odd.gw.ApprovalMode(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalModeApprover, got)
}
