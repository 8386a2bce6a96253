package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// section10 is every error code of the API's HTTP error table.
var section10 = []toolgatetype.Code{
	"invalid_request", "idempotency_key_missing", "idempotency_key_invalid", "unauthorized",
	"tool_blocked", "approval_required", "approval_mismatch", "spend_limit_exceeded",
	"tool_not_found", "quote_not_found", "execution_not_found", "not_found", "method_not_allowed",
	"quote_expired", "quote_used", "quote_outdated", "idempotency_key_in_use", "payload_too_large",
	"unsupported_media_type", "input_invalid", "quote_tool_mismatch", "idempotency_key_reused",
	"rate_limited", "internal_error",
}

// section14 is every error code of approver mode and approval requests.
var section14 = []toolgatetype.Code{
	"approver_required", "approval_pending", "approval_denied", "approval_expired",
	"approval_already_decided", "approval_grant_mismatch", "approval_request_not_found",
}

// section24 is every error code added for the first hour: the kind of key
// a route needs.
var section24 = []toolgatetype.Code{"caller_key_required"}

// api is what both the embedded gateway and a client offer, for a request
// to be made both ways against the same gateway.
type api interface {
	toolgatetype.Caller
	GetExecution(ctx context.Context, id string) (*toolgatetype.CallResult, error)
	SetApproval(ctx context.Context, tool string, mode toolgatetype.StandingMode, digest string) (*toolgatetype.StandingApproval, error)
	DeleteApproval(ctx context.Context, tool string) error
	Entry(ctx context.Context, tool string) (*toolgatetype.RegistryEntry, error)
	RequestApproval(ctx context.Context, in toolgatetype.ApprovalInput) (*toolgatetype.ApprovalRequest, error)
	ApprovalRequest(ctx context.Context, id string) (*toolgatetype.ApprovalRequest, error)
	Approve(ctx context.Context, id string, remember toolgatetype.StandingMode) (*toolgatetype.ApprovalRequest, error)
	Deny(ctx context.Context, id string) (*toolgatetype.ApprovalRequest, error)
	Executions(ctx context.Context, f toolgatetype.ExecutionFilter) iter.Seq2[*toolgatetype.ExecutionSummary, error]
	Spend(ctx context.Context, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error)
}

// embedded is the gateway in process, as a principal or, when approver is
// set, as that approver.
type embedded struct {
	*toolgate.PrincipalGateway
	gw       *toolgate.Gateway
	approver string
}

// embeddedAs is the gateway in process as who, a principal or an approver
// of testApprovers.
func (e *env) embeddedAs(who string) embedded {
	if _, ok := testApprovers.Approvers[who]; ok {
		return embedded{gw: e.gw.Gateway, approver: who}
	}
	return embedded{PrincipalGateway: e.gw.For(who), gw: e.gw.Gateway}
}

func (e embedded) GetExecution(ctx context.Context, id string) (*toolgatetype.CallResult, error) {
	return e.gw.GetExecution(ctx, e.Principal(), id)
}

func (e embedded) SetApproval(ctx context.Context, tool string, mode toolgatetype.StandingMode, digest string) (*toolgatetype.StandingApproval, error) {
	return e.gw.SetApproval(ctx, e.Principal(), tool, mode, digest)
}

func (e embedded) DeleteApproval(ctx context.Context, tool string) error {
	return e.gw.DeleteApproval(ctx, e.Principal(), tool)
}

func (e embedded) Entry(ctx context.Context, tool string) (*toolgatetype.RegistryEntry, error) {
	entry, err := e.gw.Entry(ctx, tool, toolgatetype.EntryOptions{})
	if err != nil {
		return nil, err
	}
	return &entry.RegistryEntry, nil
}

func (e embedded) RequestApproval(ctx context.Context, in toolgatetype.ApprovalInput) (*toolgatetype.ApprovalRequest, error) {
	return e.gw.RequestApproval(ctx, e.Principal(), in)
}

func (e embedded) ApprovalRequest(ctx context.Context, id string) (*toolgatetype.ApprovalRequest, error) {
	if e.approver != "" {
		return e.gw.ApprovalRequestFor(ctx, e.approver, id)
	}
	return e.gw.ApprovalRequest(ctx, e.Principal(), id)
}

func (e embedded) Approve(ctx context.Context, id string, remember toolgatetype.StandingMode) (*toolgatetype.ApprovalRequest, error) {
	return e.gw.DecideApproval(ctx, e.approver, id, toolgatetype.Decision{Approve: true, Remember: remember})
}

func (e embedded) Deny(ctx context.Context, id string) (*toolgatetype.ApprovalRequest, error) {
	return e.gw.DecideApproval(ctx, e.approver, id, toolgatetype.Decision{})
}

// Executions follows the gateway's cursors in process, f.Limit at a time,
// as the principal or the approver.
func (e embedded) Executions(ctx context.Context, f toolgatetype.ExecutionFilter) iter.Seq2[*toolgatetype.ExecutionSummary, error] {
	return pages(ctx, func(ctx context.Context, cursor string) (page[*toolgatetype.ExecutionSummary], error) {
		if cursor != "" {
			f.Cursor = cursor
		}
		var list *toolgatetype.ExecutionPage
		var err error
		if e.approver != "" {
			list, err = e.gw.ListApproverExecutions(ctx, e.approver, f)
		} else {
			list, err = e.gw.ListExecutions(ctx, e.Principal(), f)
		}
		if err != nil {
			return page[*toolgatetype.ExecutionSummary]{}, err
		}
		p := page[*toolgatetype.ExecutionSummary]{}
		for i := range list.Executions {
			p.items = append(p.items, &list.Executions[i])
		}
		if list.NextCursor != nil {
			p.next = *list.NextCursor
		}
		return p, nil
	})
}

func (e embedded) Spend(ctx context.Context, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	if e.approver != "" {
		return e.gw.ApproverSpend(ctx, e.approver, f)
	}
	return e.gw.Spend(ctx, e.Principal(), f)
}

var _ api = embedded{}
var _ api = (*Client)(nil)

// failingStore is a store whose executions cannot be read.
type failingStore struct{ storage.Store }

func (failingStore) GetExecution(context.Context, uuid.UUID) (storage.Execution, error) {
	return storage.Execution{}, errors.New("the disk is on fire")
}

func dec(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}

// Every error the gateway returns in process comes back from the client as
// an equal *toolgatetype.Error: code, message and every detail. Each case sets
// a gateway up so that one request meets the error, then makes that request
// in process and over the client, as the same party; a refusal stores
// nothing, so both meet the same state.
func TestErrorsAreTheSameInProcessAndOverTheClient(t *testing.T) {
	t.Parallel()
	for _, tc := range gatewayErrors {
		name := string(tc.code)
		if tc.name != "" {
			name += ", " + tc.name
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.opts)
			run := tc.setup(t, e)
			who := tc.as
			if who == "" {
				who = "alice"
			}
			ctx := context.Background()
			local := toolgatetest.RequireCode(t, run(ctx, e.embeddedAs(who)), tc.code)
			remote := toolgatetest.RequireCode(t, run(ctx, e.clientAs(who, &Options{MaxAttempts: 1})), tc.code)
			shown := *local
			shown.Err = nil // the cause is for the gateway's logs
			assert.Equal(t, &shown, remote)
			if tc.check != nil {
				tc.check(t, remote)
			}
		})
	}
}

// op is a request to make both ways.
type op func(ctx context.Context, a api) error

func call(req toolgatetype.CallRequest) op {
	return func(ctx context.Context, a api) error {
		_, err := a.Call(ctx, req)
		return err
	}
}

// listExecutions lists to the end, or to the first error.
func listExecutions(f toolgatetype.ExecutionFilter) op {
	return func(ctx context.Context, a api) error {
		for _, err := range a.Executions(ctx, f) {
			if err != nil {
				return err
			}
		}
		return nil
	}
}

func spend(f toolgatetype.SpendFilter) op {
	return func(ctx context.Context, a api) error { _, err := a.Spend(ctx, f); return err }
}

// naming is a check that the error names the parameter at fault.
func naming(param string) func(t *testing.T, err *toolgatetype.Error) {
	return func(t *testing.T, err *toolgatetype.Error) {
		assert.Equal(t, param, err.Parameter)
		assert.Contains(t, err.Message, param)
	}
}

var one = 1

// gatewayErrors are the errors the gateway itself returns, each with how
// to meet it.
var gatewayErrors = []struct {
	code  toolgatetype.Code
	name  string // what sets this case apart from another of the code
	as    string // who makes the request: "" for alice
	opts  *envOptions
	setup func(t *testing.T, e *env) op
	check func(t *testing.T, err *toolgatetype.Error) // that the details are there to compare
}{
	{code: toolgatetype.CodeInvalidRequest, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.QuoteID = "not-a-uuid"
		return call(req)
	}},
	{code: toolgatetype.CodeIdempotencyKeyInvalid, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.IdempotencyKey = strings.Repeat("k", 256)
		return call(req)
	}},
	{code: toolgatetype.CodeToolBlocked, setup: func(t *testing.T, e *env) op {
		return call(approved(e.quote("blocked"), "x"))
	}, check: func(t *testing.T, err *toolgatetype.Error) {
		assert.Equal(t, toolgatetype.RequirementBlocked, err.ApprovalRequirement)
		assert.NotEmpty(t, err.Reasons)
	}},
	{code: toolgatetype.CodeApprovalRequired, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.ApprovalDigest = ""
		return call(req)
	}, check: func(t *testing.T, err *toolgatetype.Error) {
		assert.Equal(t, toolgatetype.RequirementExplicitUnverified, err.ApprovalRequirement)
		assert.NotNil(t, err.ManifestDigest)
		assert.NotEmpty(t, err.Reasons)
	}},
	{code: toolgatetype.CodeApprovalMismatch, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.ApprovalDigest = "sha256:00"
		return call(req)
	}, check: func(t *testing.T, err *toolgatetype.Error) { assert.NotNil(t, err.ManifestDigest) }},
	{code: toolgatetype.CodeSpendLimitExceeded,
		opts: &envOptions{config: &toolgate.Config{SpendControls: toolgatetype.StaticSpendControls{
			"alice": {MaxPerCallUSD: dec("0.05"), Tools: map[string]toolgatetype.ToolSpendControls{"paid": {Allowed: new(bool)}}},
		}}},
		setup: func(t *testing.T, e *env) op { return call(approved(e.quote("paid"), "x")) },
		check: func(t *testing.T, err *toolgatetype.Error) { assert.Len(t, err.Violations, 2) }},
	{code: toolgatetype.CodeToolNotFound, setup: func(t *testing.T, e *env) op {
		return func(ctx context.Context, a api) error { _, err := a.Quote(ctx, "nope"); return err }
	}},
	{code: toolgatetype.CodeQuoteNotFound, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.QuoteID = uuid.NewString()
		return call(req)
	}},
	{code: toolgatetype.CodeExecutionNotFound, setup: func(t *testing.T, e *env) op {
		id := uuid.NewString()
		return func(ctx context.Context, a api) error { _, err := a.GetExecution(ctx, id); return err }
	}},
	{code: toolgatetype.CodeNotFound, setup: func(t *testing.T, e *env) op {
		return func(ctx context.Context, a api) error { return a.DeleteApproval(ctx, "echo") }
	}},
	{code: toolgatetype.CodeQuoteExpired, setup: func(t *testing.T, e *env) op {
		q := e.quote("echo")
		e.gw.Clock.Advance(toolgate.DefaultQuoteTTL)
		return call(approved(q, "x"))
	}},
	{code: toolgatetype.CodeQuoteUsed, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.IdempotencyKey = "k1"
		_, err := e.gw.For("alice").Call(context.Background(), req)
		require.NoError(t, err)
		req.IdempotencyKey = "k2"
		return call(req)
	}},
	{code: toolgatetype.CodeQuoteOutdated, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		require.NoError(t, e.gw.Registry.SetOrigin("echo", "https://mirror.example.test"))
		v, err := e.gw.Registry.Lookup("echo")
		require.NoError(t, err)
		req.ApprovalDigest = v.Digest
		return call(req)
	}},
	{code: toolgatetype.CodeIdempotencyKeyInUse, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.IdempotencyKey = "k1"
		holdInFlight(t, e, req)
		return call(req)
	}},
	{code: toolgatetype.CodeInputInvalid, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.Input = json.RawMessage(`{"v":"","n":9,"w":1}`)
		return call(req)
	}, check: func(t *testing.T, err *toolgatetype.Error) { assert.Len(t, err.Details, 3) }},
	{code: toolgatetype.CodeQuoteToolMismatch, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.Tool = "paid"
		return call(req)
	}},
	{code: toolgatetype.CodeIdempotencyKeyReused, setup: func(t *testing.T, e *env) op {
		req := approved(e.quote("echo"), "x")
		req.IdempotencyKey = "k1"
		_, err := e.gw.For("alice").Call(context.Background(), req)
		require.NoError(t, err)
		req.Input = json.RawMessage(`{"v":"another"}`)
		return call(req)
	}},
	{code: toolgatetype.CodeRateLimited,
		opts: &envOptions{config: &toolgate.Config{SpendControls: toolgatetype.StaticSpendControls{
			"alice": {RateLimitPerMinute: &one},
		}}},
		setup: func(t *testing.T, e *env) op {
			_, err := e.gw.For("alice").Call(context.Background(), approved(e.quote("echo"), "first"))
			require.NoError(t, err)
			e.gw.Clock.Advance(17 * time.Second) // into the minute
			return call(approved(e.quote("echo"), "x"))
		},
		check: func(t *testing.T, err *toolgatetype.Error) { assert.Positive(t, err.RetryAfter) }},
	{code: toolgatetype.CodeInternal, opts: &envOptions{store: failingStore{memory.New()}},
		setup: func(t *testing.T, e *env) op {
			id := uuid.NewString()
			return func(ctx context.Context, a api) error { _, err := a.GetExecution(ctx, id); return err }
		}},

	// The audit trail's and the spend summary's filters.
	{code: toolgatetype.CodeInvalidRequest, name: "limit over 100", setup: func(t *testing.T, e *env) op {
		return listExecutions(toolgatetype.ExecutionFilter{Limit: 101})
	}, check: naming("limit")},
	{code: toolgatetype.CodeInvalidRequest, name: "limit below 1", setup: func(t *testing.T, e *env) op {
		return listExecutions(toolgatetype.ExecutionFilter{Limit: -1})
	}, check: naming("limit")},
	{code: toolgatetype.CodeInvalidRequest, name: "status", setup: func(t *testing.T, e *env) op {
		return listExecutions(toolgatetype.ExecutionFilter{Status: "nope"})
	}, check: naming("status")},
	{code: toolgatetype.CodeInvalidRequest, name: "status, as an approver", as: "pat", setup: func(t *testing.T, e *env) op {
		return listExecutions(toolgatetype.ExecutionFilter{Status: "nope"})
	}, check: naming("status")},
	{code: toolgatetype.CodeInvalidRequest, name: "until not after since", setup: func(t *testing.T, e *env) op {
		now := e.gw.Clock.Now()
		return listExecutions(toolgatetype.ExecutionFilter{Since: now, Until: now})
	}, check: naming("until")},
	{code: toolgatetype.CodeInvalidRequest, name: "a tampered cursor", setup: func(t *testing.T, e *env) op {
		return listExecutions(toolgatetype.ExecutionFilter{Cursor: "nope"})
	}, check: naming("cursor")},
	{code: toolgatetype.CodeInvalidRequest, name: "another principal's cursor", as: "agent", setup: func(t *testing.T, e *env) op {
		for range 2 {
			e.gw.Clock.Advance(time.Second)
			_, err := e.gw.CallApproved(t, "alice", "paid", `{"v":"x"}`)
			require.NoError(t, err)
		}
		first, err := e.gw.ListExecutions(context.Background(), "alice", toolgatetype.ExecutionFilter{Limit: 1})
		require.NoError(t, err)
		require.NotNil(t, first.NextCursor)
		return listExecutions(toolgatetype.ExecutionFilter{Limit: 1, Cursor: *first.NextCursor})
	}, check: naming("cursor")},
	{code: toolgatetype.CodeInvalidRequest, name: "groupBy", setup: func(t *testing.T, e *env) op {
		return spend(toolgatetype.SpendFilter{GroupBy: "week"})
	}, check: naming("groupBy")},
	{code: toolgatetype.CodeInvalidRequest, name: "since not before until", as: "pat", setup: func(t *testing.T, e *env) op {
		now := e.gw.Clock.Now()
		return spend(toolgatetype.SpendFilter{Since: now.Add(time.Hour), Until: now})
	}, check: naming("since")},

	// Approver mode and approval requests.
	{code: toolgatetype.CodeApprovalRequired, name: "a grant required", as: "agent", setup: func(t *testing.T, e *env) op {
		return call(approved(e.gw.MustQuote(t, "agent", "echo"), "x"))
	}, check: func(t *testing.T, err *toolgatetype.Error) {
		assert.True(t, err.GrantRequired, "the gateway said where to ask")
		assert.NotNil(t, err.ManifestDigest)
	}},
	{code: toolgatetype.CodeApproverRequired, as: "agent", setup: func(t *testing.T, e *env) op {
		digest := *e.gw.MustQuote(t, "agent", "echo").Quote.ManifestDigest
		return func(ctx context.Context, a api) error {
			_, err := a.SetApproval(ctx, "echo", toolgatetype.ApprovalNeverAsk, digest)
			return err
		}
	}},
	{code: toolgatetype.CodeApprovalPending, as: "agent", setup: func(t *testing.T, e *env) op {
		_, req := e.askApproval("echo", "x")
		return call(req)
	}},
	{code: toolgatetype.CodeApprovalDenied, as: "agent", setup: func(t *testing.T, e *env) op {
		ar, req := e.askApproval("echo", "x")
		e.decide(ar.ID, false)
		return call(req)
	}},
	{code: toolgatetype.CodeApprovalExpired, as: "pat", setup: func(t *testing.T, e *env) op {
		ar, _ := e.askApproval("echo", "x")
		e.gw.Clock.Advance(toolgate.DefaultApprovalTTL)
		return func(ctx context.Context, a api) error { _, err := a.Approve(ctx, ar.ID, ""); return err }
	}},
	{code: toolgatetype.CodeApprovalAlreadyDecided, as: "pat", setup: func(t *testing.T, e *env) op {
		ar, _ := e.askApproval("echo", "x")
		e.decide(ar.ID, true)
		return func(ctx context.Context, a api) error { _, err := a.Deny(ctx, ar.ID); return err }
	}},
	{code: toolgatetype.CodeApprovalGrantMismatch, as: "agent", setup: func(t *testing.T, e *env) op {
		ar, req := e.askApproval("echo", "x")
		e.decide(ar.ID, true)
		req.Input = json.RawMessage(`{"v":"not what was approved"}`)
		return call(req)
	}},
	{code: toolgatetype.CodeApprovalRequestNotFound, name: "an approver of others", as: "sam", setup: func(t *testing.T, e *env) op {
		ar, _ := e.askApproval("echo", "x")
		return func(ctx context.Context, a api) error { _, err := a.ApprovalRequest(ctx, ar.ID); return err }
	}},
	{code: toolgatetype.CodeQuoteUsed, name: "the grant used", as: "agent", setup: func(t *testing.T, e *env) op {
		ar, req := e.askApproval("echo", "x")
		e.decide(ar.ID, true)
		req.IdempotencyKey = "k1"
		_, err := e.gw.For("agent").Call(context.Background(), req)
		require.NoError(t, err)
		req.IdempotencyKey = "k2"
		return call(req)
	}},
}

// holdInFlight starts req in process and keeps it at the provider until
// the test ends.
func holdInFlight(t *testing.T, e *env, req toolgatetype.CallRequest) {
	finish := e.startInFlight(req)
	t.Cleanup(func() { finish() })
}

// The codes only the HTTP layer meets have no in-process counterpart, or
// another message there; they come back as the gateway wrote them.
func TestErrorsOnlyTheHTTPLayerMeets(t *testing.T) {
	t.Parallel()
	for _, tc := range httpErrors {
		t.Run(string(tc.code), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			c := e.client(&Options{MaxAttempts: 1})
			req := httptest.NewRequest(tc.method, e.front.URL+tc.path, strings.NewReader(tc.body))
			req.RequestURI = ""
			key := tc.key
			if key == "" {
				key = aliceKey
			}
			req.Header.Set("Authorization", "Bearer "+key)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, _, err := c.send(req, request{method: tc.method, path: tc.path})
			got := toolgatetest.RequireCode(t, err, tc.code)
			assert.Equal(t, tc.status, resp.StatusCode)

			var wire struct {
				Error struct{ Code, Message string }
			}
			raw, _ := io.ReadAll(resp.Body)
			require.NoError(t, json.Unmarshal(raw, &wire))
			assert.Equal(t, &toolgatetype.Error{Code: toolgatetype.Code(wire.Error.Code), Message: wire.Error.Message}, got)
			if tc.inProcess != nil {
				local := toolgatetest.RequireCode(t, tc.inProcess(e), tc.code)
				assert.Equal(t, local, got)
			}
		})
	}
}

const callPath = "/v1/tools/echo/call"

// httpErrors are the errors the HTTP layer answers, each with a raw
// request that meets it.
var httpErrors = []struct {
	code        toolgatetype.Code
	status      int
	method      string
	path        string
	contentType string
	body        string
	key         string // "" for alice's
	inProcess   func(e *env) error
}{
	{code: toolgatetype.CodeInvalidRequest, status: 400, method: "PUT", path: "/v1/spend-controls", contentType: "application/json", body: `{"dailyLimitUsd":`},
	{code: toolgatetype.CodeIdempotencyKeyMissing, status: 400, method: "POST", path: callPath, contentType: "application/json", body: `{}`,
		inProcess: func(e *env) error {
			_, err := e.gw.Call(context.Background(), "alice", toolgatetype.CallRequest{Tool: "echo"})
			return err
		}},
	{code: toolgatetype.CodeUnauthorized, status: 401, method: "POST", path: "/v1/tools/echo/quote", key: "tg_not_a_key"},
	{code: toolgatetype.CodeCallerKeyRequired, status: 401, method: "POST", path: "/v1/tools/echo/quote", key: patKey},
	{code: toolgatetype.CodeApproverRequired, status: 403, method: "POST", path: "/v1/approval-requests/" + uuid.NewString() + "/approve"},
	{code: toolgatetype.CodeNotFound, status: 404, method: "GET", path: "/v1/nothing-here"},
	{code: "method_not_allowed", status: 405, method: "PATCH", path: "/v1/tools/echo/quote"},
	{code: "payload_too_large", status: 413, method: "PUT", path: "/v1/spend-controls", contentType: "application/json",
		body: `{"dailyLimitUsd":"` + strings.Repeat("9", 1<<20) + `"}`},
	{code: "unsupported_media_type", status: 415, method: "PUT", path: "/v1/spend-controls", contentType: "text/plain", body: `{}`},
}

func TestTheErrorTablesCoverEveryCode(t *testing.T) {
	t.Parallel()
	covered := map[toolgatetype.Code]bool{}
	for _, c := range gatewayErrors {
		covered[c.code] = true
	}
	for _, c := range httpErrors {
		covered[c.code] = true
	}
	for _, code := range slices.Concat(section10, section14, section24) {
		assert.True(t, covered[code], "no case meets %s", code)
	}
}

// Codes a later gateway may add come through as the gateway wrote them:
// any code decodes, with the details this version reads.
func TestCodesThisVersionDoesNotKnow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code   string
		status int
	}{{"spend_review_pending", 403}, {"tool_retired", 410}, {"quote_superseded", 409}} {
		t.Run(tc.code, func(t *testing.T) {
			t.Parallel()
			var sent atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sent.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprintf(w, `{"error":{"code":%q,"message":"about %s","approvalRequirement":"per_call",`+
					`"manifestDigest":"sha256:ab","reasons":["r"],"approvalRequestsUrl":"/v1/approval-requests","futureDetail":1}}`, tc.code, tc.code)
			}))
			defer srv.Close()
			c, err := New(srv.URL, aliceKey, nil)
			require.NoError(t, err)
			_, err = c.Call(context.Background(), toolgatetype.CallRequest{Tool: "echo", QuoteID: uuid.NewString(), Input: []byte(`{}`)})
			digest := "sha256:ab"
			want := &toolgatetype.Error{Code: toolgatetype.Code(tc.code), Message: "about " + tc.code,
				ApprovalRequirement: toolgatetype.RequirementPerCall, ManifestDigest: &digest, Reasons: []string{"r"}, GrantRequired: true}
			var got *toolgatetype.Error
			require.ErrorAs(t, err, &got)
			assert.Equal(t, want, got)
			assert.True(t, errors.Is(err, &toolgatetype.Error{Code: toolgatetype.Code(tc.code)}))
			assert.EqualValues(t, 1, sent.Load(), "a refusal is not retried")
		})
	}
}
