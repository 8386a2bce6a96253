package toolgate_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/upstream"
)

func TestCallCompletes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable})
	ctx := context.Background()
	q := e.quote("alice", "paid")
	res, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	require.NoError(t, err)

	x := res.Execution
	assert.Equal(t, toolgatetype.StatusCompleted, x.Status)
	assert.Nil(t, x.Error)
	assert.JSONEq(t, `{"value":"hello"}`, string(x.Output), "fields outside the output shape are dropped")
	assert.Equal(t, toolgatetype.Cost{PriceUSD: "0.1000", FeeUSD: "0.0100", TotalUSD: "0.1100", Currency: "USD"}, x.Cost)
	assert.Equal(t, toolgatetype.ToolRef{ID: q.Tool.ID, Slug: "paid", Name: "Echo paid"}, x.Tool)
	assert.False(t, res.Replayed)

	var body map[string]any
	require.NoError(t, json.Unmarshal(res.Body, &body))
	assert.ElementsMatch(t, []string{"id", "tool", "status", "cost", "output", "error", "receipt"}, keys(body))
	assert.Nil(t, body["error"])

	// The execution can be fetched by its caller, and only by its caller.
	got, err := e.gw.GetExecution(ctx, "alice", x.ID)
	require.NoError(t, err)
	assert.Equal(t, res.Body, got.Body)
	_, err = e.gw.GetExecution(ctx, "bob", x.ID)
	requireCode(t, err, toolgatetype.CodeExecutionNotFound)

	// The charge is on the ledger and the quote is used.
	assertSpent(t, e, "alice", "0.1100")
	stored, err := e.store.GetQuote(ctx, uuid.MustParse(q.Quote.ID))
	require.NoError(t, err)
	assert.Equal(t, storage.QuoteUsed, stored.State)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// assertSpent asserts principal has been charged want in all, reserved
// amounts included.
func assertSpent(t *testing.T, e *env, principal, want string) {
	t.Helper()
	e.tg.RequireSpent(t, principal, want)
}

// TestCallRejectionsLeaveNoTrace walks every way a call is refused before
// execution and checks each answers with its code and stores nothing.
func TestCallRejectionsLeaveNoTrace(t *testing.T) {
	t.Parallel()
	medium := readOnly()
	medium.OpenWorld = registry.Bool(true)
	specs := []toolSpec{
		callable,
		paidCallable,
		{slug: "other", immutable: true, capabilities: readOnly()},
		{slug: "blocked", price: "0.5"},
	}
	tests := []struct {
		name   string
		code   toolgatetype.Code
		mutate func(e *env, q *toolgatetype.QuoteResult, req *toolgatetype.CallRequest)
		check  func(t *testing.T, err *toolgatetype.Error)
	}{
		{name: "unknown tool", code: toolgatetype.CodeToolNotFound,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) { r.Tool = "nope" }},
		{name: "missing key", code: toolgatetype.CodeIdempotencyKeyMissing,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) { r.IdempotencyKey = "" }},
		{name: "key too long", code: toolgatetype.CodeIdempotencyKeyInvalid,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				r.IdempotencyKey = strings.Repeat("k", 256)
			}},
		{name: "key not printable", code: toolgatetype.CodeIdempotencyKeyInvalid,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) { r.IdempotencyKey = "k\n1" }},
		{name: "quote id not a uuid", code: toolgatetype.CodeInvalidRequest,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) { r.QuoteID = "q-1" }},
		{name: "input missing", code: toolgatetype.CodeInvalidRequest,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) { r.Input = nil }},
		{name: "input not JSON", code: toolgatetype.CodeInvalidRequest,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				r.Input = json.RawMessage(`{"v":`)
			}},
		{name: "unknown quote", code: toolgatetype.CodeQuoteNotFound,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) { r.QuoteID = uuid.NewString() }},
		{name: "another principal's quote", code: toolgatetype.CodeQuoteNotFound,
			mutate: func(e *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				r.QuoteID = e.quote("bob", "echo").Quote.ID
			}},
		{name: "quote for another tool", code: toolgatetype.CodeQuoteToolMismatch,
			mutate: func(e *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				r.QuoteID = e.quote("alice", "other").Quote.ID
			}},
		{name: "expired quote", code: toolgatetype.CodeQuoteExpired,
			mutate: func(e *env, _ *toolgatetype.QuoteResult, _ *toolgatetype.CallRequest) {
				e.clock.Advance(toolgate.DefaultQuoteTTL)
			}},
		{name: "outdated quote", code: toolgatetype.CodeQuoteOutdated,
			mutate: func(e *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				require.NoError(t, e.reg.SetOrigin("echo", "https://mirror.example.test"))
				v, _ := e.reg.Lookup("echo")
				r.ApprovalDigest = v.Digest
			}},
		{name: "blocked tool", code: toolgatetype.CodeToolBlocked,
			mutate: func(e *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				r.Tool, r.QuoteID, r.ApprovalDigest = "blocked", e.quote("alice", "blocked").Quote.ID, ""
			},
			check: func(t *testing.T, err *toolgatetype.Error) {
				assert.Equal(t, toolgatetype.RequirementBlocked, err.ApprovalRequirement)
				assert.Len(t, err.Reasons, 5)
			}},
		{name: "approval missing", code: toolgatetype.CodeApprovalRequired,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) { r.ApprovalDigest = "" },
			check: func(t *testing.T, err *toolgatetype.Error) {
				assert.Equal(t, toolgatetype.RequirementExplicitUnverified, err.ApprovalRequirement)
				require.NotNil(t, err.ManifestDigest)
				assert.Equal(t, []string{toolgatetype.ReasonEndpointNotVerified}, err.Reasons)
			}},
		{name: "approval of another digest", code: toolgatetype.CodeApprovalMismatch,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				r.ApprovalDigest = "sha256:" + strings.Repeat("0", 64)
			}},
		{name: "input fails schema", code: toolgatetype.CodeInputInvalid,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				r.Input = json.RawMessage(`{"n":9,"extra":1}`)
			},
			check: func(t *testing.T, err *toolgatetype.Error) {
				paths := []string{}
				for _, d := range err.Details {
					paths = append(paths, d.Path)
				}
				assert.Contains(t, paths, "input.v")
				assert.Contains(t, paths, "input.n")
				assert.Len(t, err.Details, 3, "the unknown property is reported too: %v", err.Details)
			}},
		{name: "input not an object", code: toolgatetype.CodeInputInvalid,
			mutate: func(_ *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				r.Input = json.RawMessage(`[1]`)
			}},
		{name: "per-call limit", code: toolgatetype.CodeSpendLimitExceeded,
			mutate: func(e *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				require.NoError(t, e.gw.SetSpendControls(context.Background(), "alice", toolgatetype.SpendControls{MaxPerCallUSD: dec("0.05")}))
				q := e.quote("alice", "paid")
				r.Tool, r.QuoteID, r.ApprovalDigest = "paid", q.Quote.ID, ""
			},
			check: func(t *testing.T, err *toolgatetype.Error) {
				assert.Equal(t, []string{"Call cost exceeds global per-call limit of $0.0500"}, err.Violations)
			}},
		{name: "tool blocked by spend control", code: toolgatetype.CodeSpendLimitExceeded,
			mutate: func(e *env, _ *toolgatetype.QuoteResult, _ *toolgatetype.CallRequest) {
				require.NoError(t, e.gw.SetSpendControls(context.Background(), "alice", toolgatetype.SpendControls{
					Tools: map[string]toolgatetype.ToolSpendControls{"echo": {Allowed: ptr(false)}}}))
			},
			check: func(t *testing.T, err *toolgatetype.Error) {
				assert.Equal(t, []string{"This tool is blocked by its spend control"}, err.Violations)
			}},
		{name: "daily limit", code: toolgatetype.CodeSpendLimitExceeded,
			mutate: func(e *env, _ *toolgatetype.QuoteResult, r *toolgatetype.CallRequest) {
				require.NoError(t, e.gw.SetSpendControls(context.Background(), "alice", toolgatetype.SpendControls{DailyLimitUSD: dec("0.1")}))
				q := e.quote("alice", "paid")
				r.Tool, r.QuoteID, r.ApprovalDigest = "paid", q.Quote.ID, ""
			},
			check: func(t *testing.T, err *toolgatetype.Error) {
				assert.Equal(t, []string{"Call would exceed global daily limit of $0.1000"}, err.Violations)
			}},
		{name: "rate limit of zero", code: toolgatetype.CodeRateLimited,
			mutate: func(e *env, _ *toolgatetype.QuoteResult, _ *toolgatetype.CallRequest) {
				require.NoError(t, e.gw.SetSpendControls(context.Background(), "alice", toolgatetype.SpendControls{RateLimitPerMinute: ptr(0)}))
			},
			check: func(t *testing.T, err *toolgatetype.Error) { assert.Equal(t, time.Minute+time.Second, err.RetryAfter) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, specs)
			q := e.quote("alice", "echo")
			req := approvedCall(q, "key-1", "hello")
			tt.mutate(e, q, &req)
			_, err := e.gw.Call(context.Background(), "alice", req)
			te := requireCode(t, err, tt.code)
			assert.NotEmpty(t, te.Message)
			if tt.check != nil {
				tt.check(t, te)
			}
			e.requireNoTrace("alice", req.IdempotencyKey, req.QuoteID)
			e.requireNoTrace("alice", "key-1", q.Quote.ID)
		})
	}
}

func TestCallRejectedKeyCanBeRetriedOnceCorrected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable})
	ctx := context.Background()
	q := e.quote("alice", "echo")
	bad := approvedCall(q, "k1", "hello")
	bad.Input = json.RawMessage(`{}`)
	_, err := e.gw.Call(ctx, "alice", bad)
	requireCode(t, err, toolgatetype.CodeInputInvalid)

	res, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
}

func TestCallReplayIsByteForByte(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable})
	ctx := context.Background()
	q := e.quote("alice", "paid")
	first, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	require.NoError(t, err)

	// Equivalent JSON in another order and spacing is the same request.
	again := approvedCall(q, "k1", "hello")
	again.Input = json.RawMessage(" { \"v\" : \"hello\" } ")
	e.clock.Advance(time.Hour) // long after the quote expired
	second, err := e.gw.Call(ctx, "alice", again)
	require.NoError(t, err)
	assert.True(t, second.Replayed)
	assert.Equal(t, first.Body, second.Body)
	assert.EqualValues(t, 1, e.upstream.Calls(), "a replay does not reach the upstream")
	assertSpent(t, e, "alice", "0.1100")
}

func TestCallKeyReusedForAnotherRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable})
	ctx := context.Background()
	q := e.quote("alice", "echo")
	_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	require.NoError(t, err)

	_, err = e.gw.Call(ctx, "alice", approvedCall(q, "k1", "different"))
	requireCode(t, err, toolgatetype.CodeIdempotencyKeyReused)

	// Keys are scoped per principal: bob's k1 is his own.
	qb := e.quote("bob", "echo")
	_, err = e.gw.Call(ctx, "bob", approvedCall(qb, "k1", "different"))
	require.NoError(t, err)
}

func TestCallQuoteUsedByAnotherKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable})
	ctx := context.Background()
	q := e.quote("alice", "echo")
	_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	require.NoError(t, err)
	_, err = e.gw.Call(ctx, "alice", approvedCall(q, "k2", "hello"))
	requireCode(t, err, toolgatetype.CodeQuoteUsed)
	_, err = e.store.GetIdempotency(ctx, "alice", "k2")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func TestCallInFlightKeyIsBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable})
	ctx := context.Background()
	release := make(chan struct{})
	entered := make(chan struct{})
	e.upstream.HandleFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		toolgatetest.EchoProvider(w, r)
	})
	q := e.quote("alice", "echo")
	done := make(chan error)
	go func() {
		_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
		done <- err
	}()
	<-entered
	_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	requireCode(t, err, toolgatetype.CodeIdempotencyKeyInUse)
	close(release)
	require.NoError(t, <-done)

	res, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	require.NoError(t, err)
	assert.True(t, res.Replayed)
}

func TestCallLeaseTakeoverAfterCrash(t *testing.T) {
	t.Parallel()
	store := toolgatetest.NewDyingStore(memory.New())
	e := newEnvWithStore(t, store, []toolSpec{paidCallable})
	ctx := context.Background()
	q := e.quote("alice", "paid")

	_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	requireCode(t, err, toolgatetype.CodeInternal)
	store.Dying.Store(false)

	// Within the lease, the abandoned run still holds the key.
	e.clock.Advance(toolgate.DefaultIdempotencyLease - time.Second)
	_, err = e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	requireCode(t, err, toolgatetype.CodeIdempotencyKeyInUse)
	assertSpent(t, e, "alice", "0.1100") // reserved, in flight

	// After the lease, and after the quote's expiry too, a retry takes over.
	e.clock.Advance(toolgate.DefaultQuoteTTL)
	res, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	assertSpent(t, e, "alice", "0.1100") // charged once
	assert.EqualValues(t, 2, e.upstream.Calls())

	again, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	assert.Equal(t, res.Body, again.Body)
}

func TestCallFailedExecutionIsNotCharged(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		handler  http.Handler
		wantCode string
	}{
		{"upstream error status", toolgatetest.Reply(http.StatusBadRequest, `{"error":"bad"}`), registry.CodeUpstreamError},
		{"invalid JSON", toolgatetest.Reply(http.StatusOK, `{"value":`), registry.CodeUpstreamInvalidResponse},
		{"output fails schema", toolgatetest.Reply(http.StatusOK, `{"value":"this string is far longer than twenty"}`), registry.CodeOutputInvalid},
		{"body over the cap", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte(`{"value":"` + strings.Repeat("x", 2048) + `"}`))
		}), registry.CodeUpstreamTooLarge},
		{"redirect elsewhere", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		}), registry.CodeUpstreamError},
		{"normalizer panics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(299) // the test tool panics on this status, see below
		}), registry.CodeUpstreamInvalidResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, []toolSpec{paidCallable}, func(c *toolgate.Config) { c.Upstream = &upstream.Config{MaxBodyBytes: 1024} })
			v, _ := e.reg.Lookup("paid")
			inner := v.Tool.Normalize
			v.Tool.Normalize = func(r registry.UpstreamResponse) (any, error) {
				if r.StatusCode == 299 {
					panic("hostile body")
				}
				return inner(r)
			}
			e.upstream.Handle(tt.handler)
			ctx := context.Background()
			q := e.quote("alice", "paid")
			res, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
			require.NoError(t, err)
			x := res.Execution
			assert.Equal(t, toolgatetype.StatusFailed, x.Status)
			assert.JSONEq(t, "null", string(x.Output))
			require.NotNil(t, x.Error)
			assert.Equal(t, tt.wantCode, x.Error.Code)
			assert.Equal(t, "0.1100", x.Cost.TotalUSD, "a failed execution still shows the quoted amounts")
			assertSpent(t, e, "alice", "0.0000")

			// Failed calls are replayed too, and never count as usage.
			again, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
			require.NoError(t, err)
			assert.Equal(t, res.Body, again.Body)
			u, err := e.store.Usage(ctx, v.Tool.ID)
			require.NoError(t, err)
			assert.Zero(t, u.Count)
		})
	}
}

func TestCallToolWithoutOutputSchemaFails(t *testing.T) {
	t.Parallel()
	spec := callable
	spec.noOutputSchema = true
	e := newEnv(t, []toolSpec{spec})
	q := e.quote("alice", "echo")
	res, err := e.gw.Call(context.Background(), "alice", approvedCall(q, "k1", "hi"))
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.StatusFailed, res.Execution.Status)
	assert.Equal(t, registry.CodeOutputInvalid, res.Execution.Error.Code)
	assert.Zero(t, e.upstream.Calls())
}

func TestCallRateLimitRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable})
	ctx := context.Background()
	require.NoError(t, e.gw.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{RateLimitPerMinute: ptr(2)}))
	for i, key := range []string{"k1", "k2"} {
		q := e.quote("alice", "echo")
		_, err := e.gw.Call(ctx, "alice", approvedCall(q, key, "hi"))
		require.NoError(t, err)
		if i == 0 {
			e.clock.Advance(20 * time.Second)
		}
	}
	q := e.quote("alice", "echo")
	_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k3", "hi"))
	te := requireCode(t, err, toolgatetype.CodeRateLimited)
	assert.Equal(t, 41*time.Second, te.RetryAfter, "the oldest call leaves the window just after 60 s")

	e.clock.Advance(40 * time.Second)
	q = e.quote("alice", "echo")
	_, err = e.gw.Call(ctx, "alice", approvedCall(q, "k3", "hi"))
	requireCode(t, err, toolgatetype.CodeRateLimited)
	e.clock.Advance(time.Second)
	q = e.quote("alice", "echo")
	_, err = e.gw.Call(ctx, "alice", approvedCall(q, "k3", "hi"))
	require.NoError(t, err)
}

func TestCallerControlsOnlyTighten(t *testing.T) {
	t.Parallel()
	operator := toolgatetype.StaticSpendControls{"alice": {DailyLimitUSD: dec("1")}}
	e := newEnv(t, []toolSpec{paidCallable}, func(c *toolgate.Config) { c.SpendControls = operator })
	ctx := context.Background()
	require.NoError(t, e.gw.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: dec("500"), MonthlyLimitUSD: dec("2")}))
	q := e.quote("alice", "paid")
	assert.Equal(t, "1.0000", q.Controls.Global.DailyLimitUSD, "a caller cannot raise the operator's limit")
	assert.Equal(t, "2.0000", q.Controls.Global.MonthlyLimitUSD, "a caller can lower a limit")

	err := e.gw.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: dec("-1")})
	requireCode(t, err, toolgatetype.CodeInvalidRequest)
}

func TestStandingApprovals(t *testing.T) {
	t.Parallel()
	medium := readOnly()
	medium.OpenWorld = registry.Bool(true)
	firstUse := toolSpec{slug: "fu", price: "0.2", immutable: true, endpointVerified: true, paymentVerified: true, capabilities: medium}
	ctx := context.Background()

	t.Run("first use is remembered for the exact digest", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, []toolSpec{firstUse})
		q := e.quote("alice", "fu")
		assert.Equal(t, toolgatetype.RequirementFirstUse, q.Policy.Approval.Requirement)
		noApproval := approvedCall(q, "k0", "hi")
		noApproval.ApprovalDigest = ""
		_, err := e.gw.Call(ctx, "alice", noApproval)
		requireCode(t, err, toolgatetype.CodeApprovalRequired)

		_, err = e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hi"))
		require.NoError(t, err)

		q = e.quote("alice", "fu")
		assert.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, q.Policy.Approval.Requirement)
		require.NotNil(t, q.Policy.Approval.Standing)
		assert.Equal(t, toolgatetype.ApprovalFirstUse, q.Policy.Approval.Standing.Mode)
		noApproval = approvedCall(q, "k2", "hi")
		noApproval.ApprovalDigest = ""
		_, err = e.gw.Call(ctx, "alice", noApproval)
		require.NoError(t, err)

		// Bob has not approved anything.
		assert.Equal(t, toolgatetype.RequirementFirstUse, e.quote("bob", "fu").Policy.Approval.Requirement)

		// A new digest makes the remembered approval stale.
		require.NoError(t, e.reg.SetOrigin("fu", "https://mirror.example.test"))
		q = e.quote("alice", "fu")
		assert.Equal(t, toolgatetype.RequirementFirstUse, q.Policy.Approval.Requirement)
		assert.True(t, q.Policy.Approval.Standing.Stale)
	})

	t.Run("never ask for this digest", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, []toolSpec{callable})
		q := e.quote("alice", "echo")
		_, err := e.gw.SetApproval(ctx, "alice", "echo", toolgatetype.ApprovalNeverAsk, "sha256:"+strings.Repeat("a", 64))
		requireCode(t, err, toolgatetype.CodeApprovalMismatch)
		_, err = e.gw.SetApproval(ctx, "alice", "echo", toolgatetype.ApprovalNeverAsk, *q.Quote.ManifestDigest)
		require.NoError(t, err)

		q = e.quote("alice", "echo")
		assert.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, q.Policy.Approval.Requirement)
		assert.True(t, q.Policy.EligibleForAutoCall)
		req := approvedCall(q, "k1", "hi")
		req.ApprovalDigest = ""
		_, err = e.gw.Call(ctx, "alice", req)
		require.NoError(t, err)

		list, err := e.gw.Approvals(ctx, "alice")
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, "echo", list[0].Tool.Slug)
		assert.False(t, list[0].Stale)

		require.NoError(t, e.gw.DeleteApproval(ctx, "alice", "echo"))
		requireCode(t, e.gw.DeleteApproval(ctx, "alice", "echo"), toolgatetype.CodeNotFound)
		assert.Equal(t, toolgatetype.RequirementExplicitUnverified, e.quote("alice", "echo").Policy.Approval.Requirement)
	})

	t.Run("ask only for charged calls", func(t *testing.T) {
		t.Parallel()
		free := toolSpec{slug: "free", immutable: true, endpointVerified: true, capabilities: medium}
		e := newEnv(t, []toolSpec{firstUse, free})
		for _, slug := range []string{"fu", "free"} {
			q := e.quote("alice", slug)
			_, err := e.gw.SetApproval(ctx, "alice", slug, toolgatetype.ApprovalAskChargedCalls, *q.Quote.ManifestDigest)
			require.NoError(t, err)
		}
		assert.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, e.quote("alice", "free").Policy.Approval.Requirement)
		assert.Equal(t, toolgatetype.RequirementFirstUse, e.quote("alice", "fu").Policy.Approval.Requirement)
	})

	t.Run("ask every call overrides first use", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, []toolSpec{firstUse})
		q := e.quote("alice", "fu")
		_, err := e.gw.SetApproval(ctx, "alice", "fu", toolgatetype.ApprovalAskEveryCall, *q.Quote.ManifestDigest)
		require.NoError(t, err)
		_, err = e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hi"))
		require.NoError(t, err)
		q = e.quote("alice", "fu")
		assert.Equal(t, toolgatetype.RequirementPerCall, q.Policy.Approval.Requirement, "the caller's setting is kept after an approved call")
	})

	t.Run("blocked stays blocked", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, []toolSpec{{slug: "weather", price: "0.001"}})
		_, err := e.gw.SetApproval(ctx, "alice", "weather", toolgatetype.ApprovalNeverAsk, "sha256:"+strings.Repeat("a", 64))
		requireCode(t, err, toolgatetype.CodeToolBlocked)
	})
}

func TestUsageCountsCompletedCallsAndUniqueUsers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable})
	ctx := context.Background()
	for i, who := range []string{"alice", "alice", "bob"} {
		q := e.quote(who, "echo")
		_, err := e.gw.Call(ctx, who, approvedCall(q, "k"+string(rune('0'+i)), "hi"))
		require.NoError(t, err)
	}
	entry, err := e.gw.Entry(ctx, "echo", toolgatetype.EntryOptions{ExposeUsageCounts: true})
	require.NoError(t, err)
	assert.EqualValues(t, 3, *entry.Usage.Count)
	assert.EqualValues(t, 2, *entry.Usage.UniqueUsers)
	assert.Equal(t, "Under 1K invokes", entry.Usage.InvocationsLabel)

	hidden, err := e.gw.Entry(ctx, "echo", toolgatetype.EntryOptions{})
	require.NoError(t, err)
	assert.Nil(t, hidden.Usage.Count, "exact counts are shown only where the operator allows")
	raw, _ := json.Marshal(hidden.Usage)
	assert.NotContains(t, string(raw), "count")
}

func TestCallOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable})
	entered := make(chan struct{})
	release := make(chan struct{})
	e.upstream.HandleFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		toolgatetest.EchoProvider(w, r)
	})
	q := e.quote("alice", "paid")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "hello"))
		done <- err
	}()
	<-entered
	cancel() // the caller disconnects mid-call
	close(release)
	require.NoError(t, <-done)

	// The retry gets the real, completed outcome, charged once.
	res, err := e.gw.Call(context.Background(), "alice", approvedCall(q, "k1", "hello"))
	require.NoError(t, err)
	assert.True(t, res.Replayed)
	assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	assertSpent(t, e, "alice", "0.1100")
}
