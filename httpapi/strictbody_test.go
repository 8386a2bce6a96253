package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage/memory"
)

// TestCallBodiesAreStrict: a call body means one thing. A member name in
// another case ("quoteID") is not quoteId, and a member sent twice, at any
// depth, is refused rather than read as its last copy: 400 invalid_request
// naming it, and nothing runs, so the quote still serves the right call.
func TestCallBodiesAreStrict(t *testing.T) {
	t.Parallel()
	a := newAPI(t, memory.New())
	quake := "earthquake-search"
	q := a.quote(aliceKey, quake)
	valid := callBody(q, quakeInput)
	digest := *q.Quote.ManifestDigest
	for _, c := range []struct {
		name, body, names string
	}{
		{"name in another case", strings.Replace(valid, `"quoteId"`, `"quoteID"`, 1), `unknown field "quoteID"`},
		{"name in another case inside approval", strings.Replace(valid, `"manifestDigest"`, `"ManifestDigest"`, 1), `unknown field "approval.ManifestDigest"`},
		{"quoteId twice, a fake first", `{"quoteId":"00000000-0000-0000-0000-000000000000",` + valid[1:], `duplicate field "quoteId"`},
		{"quoteId twice, spelled with an escape", strings.TrimSuffix(valid, "}") + `,"quote\u0049d":"x"}`, `duplicate field "quoteId"`},
		{"input twice", strings.TrimSuffix(valid, "}") + `,"input":{"starttime":"2020-01-01"}}`, `duplicate field "input"`},
		{"a member twice inside input", callBody(q, `{"starttime":"2024-09-25","limit":1,"limit":500}`), `duplicate field "input.limit"`},
		{"a member twice deep inside input", callBody(q, `{"starttime":"2024-09-25","x":[{"y":{"z":1,"z":2}}]}`), `duplicate field "input.x[0].y.z"`},
		{"a member twice inside approval", `{"quoteId":"` + q.Quote.ID + `","input":` + quakeInput + `,"approval":{"manifestDigest":"sha256:0","manifestDigest":"` + digest + `"}}`, `duplicate field "approval.manifestDigest"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := a.call(aliceKey, quake, "k-strict", c.body)
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			assert.Equal(t, "invalid_request", r.errorCode(t))
			assert.Equal(t, c.names, r.errorMessage(t))
		})
	}
	// Nothing ran and nothing was kept under the key: the quote and the
	// key serve the call as sent exactly.
	r := a.call(aliceKey, quake, "k-strict", valid)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Empty(t, r.header.Get("Idempotent-Replayed"))
}

// TestOtherBodiesAreStrict: the same holds for every body the API reads:
// the quote's, approval requests' and their decisions', resolutions', spend
// controls' (a type that reads its own JSON) and standing approvals'.
func TestOtherBodiesAreStrict(t *testing.T) {
	t.Parallel()
	a := newApproverAPI(t)
	q := a.quote(agentKey, "echo")
	_, pending := a.askApproval(agentKey, "echo", `{"v":"hello"}`)
	id := pending["id"].(string)
	before := a.do("GET", "/v1/approval-requests/"+id, patKey, "").body
	for _, c := range []struct {
		name, method, path, key, body, names string
	}{
		{"quote body with a member twice", "POST", "/v1/tools/echo/quote", agentKey, `{"a":1,"a":2}`, `duplicate field "a"`},
		{"approval request, name in another case", "POST", "/v1/approval-requests", agentKey, `{"quoteID":"` + q.Quote.ID + `","input":{"v":"x"}}`, `unknown field "quoteID"`},
		{"approval request, quoteId twice", "POST", "/v1/approval-requests", agentKey, `{"quoteId":"x","quoteId":"` + q.Quote.ID + `","input":{"v":"x"}}`, `duplicate field "quoteId"`},
		{"approval request, a member twice inside input", "POST", "/v1/approval-requests", agentKey, `{"quoteId":"` + q.Quote.ID + `","input":{"v":"shown","v":"run"}}`, `duplicate field "input.v"`},
		{"approve, remember twice", "POST", "/v1/approval-requests/" + id + "/approve", patKey, `{"remember":"ask_charged_calls","remember":"never_ask"}`, `duplicate field "remember"`},
		{"approve, name in another case", "POST", "/v1/approval-requests/" + id + "/approve", patKey, `{"Remember":"never_ask"}`, `unknown field "Remember"`},
		{"resolve, outcome twice in two cases", "POST", "/v1/executions/" + id + "/resolve", patKey, `{"outcome":"completed","Outcome":"failed"}`, `unknown field "Outcome"`},
		{"spend controls, name in another case", "PUT", "/v1/spend-controls", aliceKey, `{"maxPerCallUSD":"1.0000"}`, `unknown field "maxPerCallUSD"`},
		{"spend controls, a limit twice", "PUT", "/v1/spend-controls", aliceKey, `{"maxPerCallUsd":"1.0000","maxPerCallUsd":"1000.0000"}`, `duplicate field "maxPerCallUsd"`},
		{"spend controls, a tool's name in another case", "PUT", "/v1/spend-controls", aliceKey, `{"tools":{"echo":{"Allowed":false}}}`, `unknown field "tools.echo.Allowed"`},
		{"a tool's spend controls, a member twice", "PUT", "/v1/spend-controls/tools/echo", aliceKey, `{"allowed":false,"allowed":true}`, `duplicate field "allowed"`},
		{"standing approval, name in another case", "PUT", "/v1/approvals/echo?principal=agent", patKey, `{"MODE":"never_ask"}`, `unknown field "MODE"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := a.do(c.method, c.path, c.key, c.body)
			require.Equal(t, http.StatusBadRequest, r.status, "%s", r.body)
			assert.Equal(t, "invalid_request", r.errorCode(t))
			assert.Equal(t, c.names, r.errorMessage(t))
		})
	}
	assert.Equal(t, string(before), string(a.do("GET", "/v1/approval-requests/"+id, patKey, "").body), "the request was not decided")
	controls := a.do("GET", "/v1/spend-controls", aliceKey, "")
	require.Equal(t, http.StatusOK, controls.status, "%s", controls.body)
	assert.NotContains(t, string(controls.body), "1000.0000")
	assert.NotContains(t, string(controls.body), `"allowed":true`)
}
