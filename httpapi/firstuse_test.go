package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An approver who approves a first_use tool's call with {} approves that
// call only: the agent's next call of the tool, with another input and no
// grant, is refused as needing approval and charges nothing, and the
// request reads "remember": "once". Approving with "remember": "first_use"
// ("don't ask again for this version") is what lets later calls through.
func TestApproveWithNoRememberIsThisCallOnlyOverHTTP(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	const input = `{"goal":"summit","step":1}`
	q, req := a.askApproval(agentKey, "goal-data", input)
	id := req["id"].(string)

	r := a.do("POST", "/v1/approval-requests/"+id+"/approve", patKey, "{}")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "once", r.json(t)["remember"], "the approve says what it applied")
	r = a.call(agentKey, "goal-data", "k1", grantBody(q, input, id))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"])

	// The next call, another input, no grant: asked again, nothing run.
	next := a.quote(agentKey, "goal-data")
	r = a.call(agentKey, "goal-data", "k2", callBody(next, `{"goal":"summit","step":2}`))
	require.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	e := r.json(t)["error"].(map[string]any)
	assert.Equal(t, "approval_required", e["code"])
	assert.Equal(t, "first_use", e["approvalRequirement"])
	a.clock.Advance(time.Second)
	spend := a.do("GET", "/v1/spend", agentKey, "")
	require.Equal(t, http.StatusOK, spend.status, "%s", spend.body)
	assert.Equal(t, "0.1100", spend.json(t)["totalUsd"], "charged for the approved call only")

	// The request's record, as its caller and its approver read it.
	for _, key := range []string{agentKey, patKey} {
		r = a.do("GET", "/v1/approval-requests/"+id, key, "")
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.Equal(t, "used", r.json(t)["status"])
		assert.Equal(t, "once", r.json(t)["remember"])
	}
	assert.Contains(t, string(a.do("GET", "/v1/approval-requests/"+id, agentKey, "").body), `"remember":"once"`)

	// Approved with "don't ask again for this version": the call after runs
	// with no grant.
	q, req = a.askApproval(agentKey, "goal-data", input)
	id = req["id"].(string)
	r = a.do("POST", "/v1/approval-requests/"+id+"/approve", patKey, `{"remember":"first_use"}`)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "first_use", r.json(t)["remember"])
	r = a.call(agentKey, "goal-data", "k3", grantBody(q, input, id))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	next = a.quote(agentKey, "goal-data")
	r = a.call(agentKey, "goal-data", "k4", callBody(next, `{"goal":"summit","step":3}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "completed", r.json(t)["status"])
}

// The remember choices the API takes, and what it refuses: first_use only
// for a tool whose requirement is first_use, never an unknown value.
func TestApproveRememberChoicesOverHTTP(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tool, body string
		status           int
		remember         string
	}{
		{"NoBody", "goal-data", "", http.StatusOK, "once"},
		{"Once", "goal-data", `{"remember":"once"}`, http.StatusOK, "once"},
		{"FirstUse", "goal-data", `{"remember":"first_use"}`, http.StatusOK, "first_use"},
		{"NeverAsk", "echo", `{"remember":"never_ask"}`, http.StatusOK, "never_ask"},
		{"FirstUseOfAnotherRequirement", "echo", `{"remember":"first_use"}`, http.StatusBadRequest, ""},
		{"Empty", "goal-data", `{"remember":""}`, http.StatusBadRequest, ""},
		{"Unknown", "goal-data", `{"remember":"always"}`, http.StatusBadRequest, ""},
		{"AskEveryCall", "goal-data", `{"remember":"ask_every_call"}`, http.StatusBadRequest, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := newApproverAPI(t)
			input := `{"v":"hi"}`
			if c.tool == "goal-data" {
				input = `{"goal":"summit","step":1}`
			}
			_, req := a.askApproval(agentKey, c.tool, input)
			id := req["id"].(string)
			r := a.do("POST", "/v1/approval-requests/"+id+"/approve", patKey, c.body)
			require.Equal(t, c.status, r.status, "%s", r.body)
			if c.status != http.StatusOK {
				assert.Equal(t, "invalid_request", r.errorCode(t))
				assert.Equal(t, "pending", a.requestStatus(id), "a refused decision decides nothing")
				return
			}
			assert.Equal(t, c.remember, r.json(t)["remember"])
		})
	}
}
