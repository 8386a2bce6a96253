package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The keys of the approver-mode tests: agent is an agent whose calls pat,
// a person, approves; sam approves for someone else.
const (
	agentKey = "tg_test_agent"
	patKey   = "tg_test_pat_approver"
	samKey   = "tg_test_sam_approver"
)

// newApproverAPI serves a gateway whose principal agent is in approver
// mode, with alice in caller mode, pat approving for both, and sam for
// another principal only.
func newApproverAPI(t *testing.T, opts ...func(*toolgate.Config)) *api {
	t.Helper()
	cfg := &toolgate.Config{Approvers: toolgatetype.StaticApprovers{
		Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
		Approvers: map[string][]string{"pat": {"agent", "alice"}, "sam": {"other"}},
	}}
	for _, o := range opts {
		o(cfg)
	}
	tg := toolgatetest.New(t, &toolgatetest.Options{Config: cfg})
	require.NoError(t, tg.Registry.SetTrust("goal-data", registry.Trust{PaymentVerified: registry.Bool(true)}))
	a := &api{t: t, gw: tg.Gateway, reg: tg.Registry, clock: tg.Clock, store: tg.Store, upper: &gatedTransport{inner: tg.Upstream.Handler()}}
	tg.Upstream.Handle(a.upper)
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
	require.NoError(t, keys.AddKey("agent", agentKey))
	require.NoError(t, keys.AddApproverKey("pat", patKey))
	require.NoError(t, keys.AddApproverKey("sam", samKey))
	a.keys = keys
	a.srv = httptest.NewServer(httpapi.NewHandler(tg.Gateway, &httpapi.Options{Authenticator: keys, MaxBodyBytes: 4096}))
	t.Cleanup(a.srv.Close)
	a.client = a.srv.Client()
	return a
}

// askApproval quotes tool for the caller and asks approval of a call with input.
func (a *api) askApproval(key, tool, input string) (quoted, map[string]any) {
	a.t.Helper()
	q := a.quote(key, tool)
	r := a.do("POST", "/v1/approval-requests", key, `{"quoteId":"`+q.Quote.ID+`","input":`+input+`}`)
	require.Equal(a.t, http.StatusCreated, r.status, "%s", r.body)
	return q, r.json(a.t)
}

// grantBody is a call under q with input, carrying the digest and grant.
func grantBody(q quoted, input, grant string) string {
	return `{"quoteId":"` + q.Quote.ID + `","input":` + input + `,"approval":{"manifestDigest":"` + *q.Quote.ManifestDigest + `","grantId":"` + grant + `"}}`
}

func (a *api) requestStatus(id string) string {
	a.t.Helper()
	r := a.do("GET", "/v1/approval-requests/"+id, patKey, "")
	require.Equal(a.t, http.StatusOK, r.status, "%s", r.body)
	return r.json(a.t)["status"].(string)
}

func TestApprovalRequestFlowOverHTTP(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	const input = `{"v":"hello"}`

	// The digest copied from the quote approves nothing: the error says
	// where to ask instead.
	q := a.quote(agentKey, "echo")
	r := a.call(agentKey, "echo", "k1", callBody(q, input))
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	e := r.json(t)["error"].(map[string]any)
	assert.Equal(t, "approval_required", e["code"])
	assert.Equal(t, a.srv.URL+"/v1/approval-requests", e["approvalRequestsUrl"])
	assert.Equal(t, "explicit_unverified", e["approvalRequirement"])
	assert.Equal(t, *q.Quote.ManifestDigest, e["manifestDigest"])

	r = a.do("POST", "/v1/approval-requests", agentKey, `{"quoteId":"`+q.Quote.ID+`","input":`+input+`}`)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	req := r.json(t)
	id := req["id"].(string)
	assert.Equal(t, "pending", req["status"])
	assert.Equal(t, "agent", req["principal"])
	assert.Equal(t, q.Quote.ID, req["quoteId"])
	assert.Equal(t, map[string]any{"id": req["tool"].(map[string]any)["id"], "slug": "echo", "name": "Echo"}, req["tool"])
	assert.Equal(t, *q.Quote.ManifestDigest, req["manifestDigest"])
	assert.Equal(t, []any{"0.0000", "0.0000", "0.0000"}, []any{req["priceUsd"], req["feeUsd"], req["totalUsd"]})
	assert.Equal(t, sha256Hex(`{"v":"hello"}`), req["inputSha256"], "of the canonical input")
	assert.Equal(t, a.srv.URL+"/approvals/"+id, req["approveUrl"])
	for _, k := range []string{"createdAt", "expiresAt"} {
		_, err := time.Parse(time.RFC3339, req[k].(string))
		assert.NoError(t, err, k)
	}
	assert.NotContains(t, req, "decidedBy")

	// The caller and its approver read it; anyone else finds nothing.
	for _, c := range []struct {
		key    string
		status int
	}{{agentKey, 200}, {patKey, 200}, {samKey, 404}, {aliceKey, 404}, {"", 401}, {"tg_nobody", 401}} {
		r := a.do("GET", "/v1/approval-requests/"+id, c.key, "")
		assert.Equal(t, c.status, r.status, "%s: %s", c.key, r.body)
		if c.status == 404 {
			assert.Equal(t, "approval_request_not_found", r.errorCode(t))
		}
	}

	list := a.do("GET", "/v1/approval-requests?status=pending", patKey, "")
	require.Equal(t, http.StatusOK, list.status, "%s", list.body)
	page := list.json(t)
	require.Len(t, page["approvalRequests"], 1)
	assert.Equal(t, id, page["approvalRequests"].([]any)[0].(map[string]any)["id"])
	assert.Nil(t, page["nextCursor"])
	assert.Empty(t, a.do("GET", "/v1/approval-requests", samKey, "").json(t)["approvalRequests"])

	r = a.call(agentKey, "echo", "k1", grantBody(q, input, id))
	assert.Equal(t, "approval_pending", r.errorCode(t))

	r = a.do("POST", "/v1/approval-requests/"+id+"/approve", patKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	decided := r.json(t)
	assert.Equal(t, "approved", decided["status"])
	assert.Equal(t, "pat", decided["decidedBy"])
	assert.Contains(t, decided, "decidedAt")

	r = a.call(agentKey, "echo", "k1", grantBody(q, input, id))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"])
	assert.Equal(t, "used", a.requestStatus(id))

	// The grant served once.
	r = a.call(agentKey, "echo", "k2", grantBody(a.quote(agentKey, "echo"), input, id))
	assert.Equal(t, http.StatusUnprocessableEntity, r.status)
	assert.Equal(t, "approval_grant_mismatch", r.errorCode(t))
}

func TestAnAgentCannotApprove(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	_, req := a.askApproval(agentKey, "echo", `{"v":"hello"}`)
	id := req["id"].(string)
	cases := []struct {
		name   string
		key    string
		status int
		code   string
	}{
		{"TheAgentsOwnKey", agentKey, http.StatusForbidden, "approver_required"},
		{"AnotherCallersKey", aliceKey, http.StatusForbidden, "approver_required"},
		{"NoKey", "", http.StatusUnauthorized, "unauthorized"},
		{"AnUnknownKey", "tg_guess", http.StatusUnauthorized, "unauthorized"},
		{"AnApproverOfOthers", samKey, http.StatusNotFound, "approval_request_not_found"},
	}
	for _, c := range cases {
		for _, route := range []string{"approve", "deny"} {
			t.Run(c.name+"/"+route, func(t *testing.T) {
				r := a.do("POST", "/v1/approval-requests/"+id+"/"+route, c.key, `{}`)
				assert.Equal(t, c.status, r.status, "%s", r.body)
				assert.Equal(t, c.code, r.errorCode(t))
				if c.status == http.StatusUnauthorized {
					assert.NotEmpty(t, r.header.Get("WWW-Authenticate"))
				}
				assert.Equal(t, "pending", a.requestStatus(id), "nothing changed")
			})
		}
	}
	// Nor list what approvers see.
	assert.Equal(t, "approver_required", a.do("GET", "/v1/approval-requests", agentKey, "").errorCode(t))
}

func TestApproverKeysAreRefusedOnCallerRoutes(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	q := a.quote(agentKey, "echo")
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/tools/echo/quote", "{}"},
		{"POST", "/v1/tools/echo/call", callBody(q, `{"v":"x"}`)},
		{"POST", "/v1/approval-requests", `{"quoteId":"` + q.Quote.ID + `","input":{"v":"x"}}`},
		{"GET", "/v1/executions/9b8a7c6d-5e4f-4321-8765-43210fedcba9", ""},
		{"GET", "/v1/spend-controls", ""},
	} {
		r := a.do(c.method, c.path, patKey, c.body, "Idempotency-Key", "k1")
		assert.Equal(t, http.StatusUnauthorized, r.status, "%s %s: %s", c.method, c.path, r.body)
		assert.Equal(t, "caller_key_required", r.errorCode(t), "the answer names the kind of key the route needs")
		assert.Equal(t, "this route needs a caller's API key; an approver key was given", r.json(t)["error"].(map[string]any)["message"])
		assert.NotEmpty(t, r.header.Get("WWW-Authenticate"))
		assert.NotContains(t, string(r.body), patKey)
	}
}

// A caller's key on an approver's route is told the route needs an
// approver key, and, only where the caller tried to, that it cannot
// approve.
func TestCallerKeysAreToldTheRouteNeedsAnApproverKey(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	_, req := a.askApproval(agentKey, "echo", `{"v":"hello"}`)
	id := req["id"].(string)
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/v1/approval-requests", "this route needs an approver key: it lists the requests waiting for an approver; a caller's API key was given"},
		{"POST", "/v1/approval-requests/" + id + "/approve", "this route needs an approver key: a caller cannot approve its own calls; a caller's API key was given"},
		{"POST", "/v1/approval-requests/" + id + "/deny", "this route needs an approver key: approval requests are decided by approvers; a caller's API key was given"},
		{"POST", "/v1/executions/" + id + "/resolve", "this route needs an approver key: only an approver resolves a call whose outcome is unknown; a caller's API key was given"},
	} {
		r := a.do(c.method, c.path, aliceKey, "")
		assert.Equal(t, http.StatusForbidden, r.status, "%s %s: %s", c.method, c.path, r.body)
		assert.Equal(t, "approver_required", r.errorCode(t))
		assert.Equal(t, c.want, r.json(t)["error"].(map[string]any)["message"])
		assert.NotContains(t, string(r.body), aliceKey)
	}
}

func TestDecisionsOverHTTP(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		before func(a *api, id string)
		route  string
		body   string
		status int
		code   string
	}{
		{"SecondDecision", func(a *api, id string) {
			require.Equal(t, 200, a.do("POST", "/v1/approval-requests/"+id+"/deny", patKey, "").status)
		}, "approve", "", http.StatusConflict, "approval_already_decided"},
		{"AfterExpiry", func(a *api, _ string) { a.clock.Advance(toolgate.DefaultApprovalTTL) }, "approve", "", http.StatusConflict, "approval_expired"},
		{"RememberUnknown", nil, "approve", `{"remember":"always"}`, http.StatusBadRequest, "invalid_request"},
		{"RememberEmpty", nil, "approve", `{"remember":""}`, http.StatusBadRequest, "invalid_request"},
		{"DenyTakesNoFields", nil, "deny", `{"remember":"never_ask"}`, http.StatusBadRequest, "invalid_request"},
		{"NotJSON", nil, "approve", `remember=never_ask`, http.StatusBadRequest, "invalid_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := newApproverAPI(t)
			_, req := a.askApproval(agentKey, "echo", `{"v":"hello"}`)
			id := req["id"].(string)
			if c.before != nil {
				c.before(a, id)
			}
			before := a.do("GET", "/v1/approval-requests/"+id, patKey, "").body
			r := a.do("POST", "/v1/approval-requests/"+id+"/"+c.route, patKey, c.body)
			assert.Equal(t, c.status, r.status, "%s", r.body)
			assert.Equal(t, c.code, r.errorCode(t))
			assert.Equal(t, string(before), string(a.do("GET", "/v1/approval-requests/"+id, patKey, "").body), "nothing changed")
		})
	}

	t.Run("ApproveRemembering", func(t *testing.T) {
		t.Parallel()
		a := newApproverAPI(t)
		_, req := a.askApproval(agentKey, "echo", `{"v":"hello"}`)
		r := a.do("POST", "/v1/approval-requests/"+req["id"].(string)+"/approve", patKey, `{"remember":"never_ask"}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.Equal(t, "never_ask", r.json(t)["remember"])
		list := a.do("GET", "/v1/approvals?principal=agent", patKey, "").json(t)["approvals"].([]any)
		require.Len(t, list, 1)
		assert.Equal(t, "never_ask", list[0].(map[string]any)["mode"])
		// The next call needs no grant.
		next := a.quote(agentKey, "echo")
		r = a.call(agentKey, "echo", "k1", `{"quoteId":"`+next.Quote.ID+`","input":{"v":"again"}}`)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	})
}

func TestGrantRefusalsOverHTTP(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		decide string // "", "approve" or "deny"
		body   func(q quoted, id string) string
		status int
		code   string
	}{
		{"Pending", "", func(q quoted, id string) string { return grantBody(q, `{"v":"hello"}`, id) }, http.StatusForbidden, "approval_pending"},
		{"Denied", "deny", func(q quoted, id string) string { return grantBody(q, `{"v":"hello"}`, id) }, http.StatusForbidden, "approval_denied"},
		{"AnotherInput", "approve", func(q quoted, id string) string { return grantBody(q, `{"v":"other"}`, id) }, http.StatusUnprocessableEntity, "approval_grant_mismatch"},
		{"EmptyGrant", "approve", func(q quoted, _ string) string { return grantBody(q, `{"v":"hello"}`, "") }, http.StatusBadRequest, "invalid_request"},
		{"NotAnID", "approve", func(q quoted, _ string) string { return grantBody(q, `{"v":"hello"}`, "yes") }, http.StatusBadRequest, "invalid_request"},
		{"Unknown", "approve", func(q quoted, _ string) string {
			return grantBody(q, `{"v":"hello"}`, "00000000-0000-4000-8000-000000000000")
		}, http.StatusNotFound, "approval_request_not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := newApproverAPI(t)
			q, req := a.askApproval(agentKey, "echo", `{"v":"hello"}`)
			id := req["id"].(string)
			if c.decide != "" {
				require.Equal(t, 200, a.do("POST", "/v1/approval-requests/"+id+"/"+c.decide, patKey, "").status)
			}
			r := a.call(agentKey, "echo", "k1", c.body(q, id))
			assert.Equal(t, c.status, r.status, "%s", r.body)
			assert.Equal(t, c.code, r.errorCode(t))

			// Refused, the call stored nothing: with the key and, once
			// approved, the grant, the right call goes through.
			if c.decide == "approve" {
				r = a.call(agentKey, "echo", "k1", grantBody(q, `{"v":"hello"}`, id))
				require.Equal(t, http.StatusOK, r.status, "%s", r.body)
				assert.Equal(t, "completed", r.json(t)["status"])
			}
		})
	}
}

func TestStandingApprovalsNeedAnApproverInApproverMode(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	digest := *a.quote(agentKey, "echo").Quote.ManifestDigest
	body := `{"mode":"never_ask","manifestDigest":"` + digest + `"}`
	cases := []struct {
		name, key, path string
		status          int
		code            string
	}{
		{"TheAgentItself", agentKey, "/v1/approvals/echo", http.StatusForbidden, "approver_required"},
		{"AnApproverNamingNoOne", patKey, "/v1/approvals/echo", http.StatusBadRequest, "invalid_request"},
		{"AnApproverOfOthers", samKey, "/v1/approvals/echo?principal=agent", http.StatusNotFound, "not_found"},
	}
	for _, c := range cases {
		r := a.do("PUT", c.path, c.key, body)
		assert.Equal(t, c.status, r.status, "%s: %s", c.name, r.body)
		assert.Equal(t, c.code, r.errorCode(t), c.name)
	}
	assert.Empty(t, a.do("GET", "/v1/approvals", agentKey, "").json(t)["approvals"])

	r := a.do("PUT", "/v1/approvals/echo?principal=agent", patKey, body)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	q := a.quote(agentKey, "echo")
	r = a.call(agentKey, "echo", "k1", `{"quoteId":"`+q.Quote.ID+`","input":{"v":"covered"}}`)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	// The caller may still take a standing approval away.
	assert.Equal(t, http.StatusNoContent, a.do("DELETE", "/v1/approvals/echo", agentKey, "").status)
	assert.Equal(t, "not_found", a.do("DELETE", "/v1/approvals/echo?principal=agent", patKey, "").errorCode(t))

	// A caller-mode principal sets its own, as before.
	digest = *a.quote(aliceKey, "echo").Quote.ManifestDigest
	assert.Equal(t, http.StatusOK, a.do("PUT", "/v1/approvals/echo", aliceKey, `{"mode":"never_ask","manifestDigest":"`+digest+`"}`).status)
}

func TestListApprovalRequestsOverHTTP(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	var ids []string
	for i := range 3 {
		_, req := a.askApproval(agentKey, "echo", fmt.Sprintf(`{"v":"%d"}`, i))
		ids = append(ids, req["id"].(string))
		a.clock.Advance(time.Second)
	}
	var got []string
	path := "/v1/approval-requests?limit=2"
	for range 5 {
		r := a.do("GET", path, patKey, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		page := r.json(t)
		for _, item := range page["approvalRequests"].([]any) {
			m := item.(map[string]any)
			got = append(got, m["id"].(string))
			assert.Equal(t, a.srv.URL+"/approvals/"+m["id"].(string), m["approveUrl"])
		}
		next, ok := page["nextCursor"].(string)
		if !ok {
			break
		}
		path = "/v1/approval-requests?limit=2&cursor=" + next
	}
	assert.Equal(t, []string{ids[2], ids[1], ids[0]}, got)

	for _, q := range []string{"limit=0", "limit=101", "limit=x", "status=maybe", "cursor=forged"} {
		assert.Equal(t, "invalid_request", a.do("GET", "/v1/approval-requests?"+q, patKey, "").errorCode(t), q)
	}
}

func TestDecidingNoSuchRequest(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	for _, id := range []string{"00000000-0000-4000-8000-000000000000", "not-an-id"} {
		r := a.do("POST", "/v1/approval-requests/"+id+"/approve", patKey, "")
		assert.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
		assert.Equal(t, "approval_request_not_found", r.errorCode(t))
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// A person approves twenty minutes after the agent's quote, long past the
// quote's own five minutes: the call runs over HTTP, once, at the quoted
// price.
func TestApprovalTwentyMinutesLaterOverHTTP(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	const input = `{"goal":"summit","step":1}`
	q, req := a.askApproval(agentKey, "goal-data", input)
	require.Equal(t, "0.1100", q.Quote.TotalUSD)
	id := req["id"].(string)
	expires, err := time.Parse(time.RFC3339, req["expiresAt"].(string))
	require.NoError(t, err)
	assert.Equal(t, a.clock.Now().Add(toolgate.DefaultApprovalTTL), expires)

	a.clock.Advance(20 * time.Minute)
	r := a.do("POST", "/v1/approval-requests/"+id+"/approve", patKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)

	r = a.call(agentKey, "goal-data", "k1", grantBody(q, input, id))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	exec := r.json(t)
	assert.Equal(t, "completed", exec["status"])
	assert.Equal(t, map[string]any{"priceUsd": "0.1000", "feeUsd": "0.0100", "totalUsd": "0.1100", "currency": "USD"}, exec["cost"])
	assert.Equal(t, "used", a.requestStatus(id))

	r = a.call(agentKey, "goal-data", "k2", grantBody(q, input, id))
	assert.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	assert.Equal(t, "quote_used", r.errorCode(t), "the quote serves one call")

	a.clock.Advance(time.Second)
	r = a.do("GET", "/v1/spend", agentKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "0.1100", r.json(t)["totalUsd"], "charged once")
}
