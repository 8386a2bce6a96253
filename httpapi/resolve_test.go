package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

const (
	danaKey = "tg_test_dana_approver"
	erinKey = "tg_test_erin_approver"
)

// ambiguousAPI serves a gateway in which one goal-data call of alice's
// (the operator marked the tool not retry-safe) was taken over after its
// run died, so its outcome is unknown. dana approves for alice, erin for
// someone else.
func ambiguousAPI(t *testing.T) (*api, string) {
	t.Helper()
	store := toolgatetest.NewDyingStore(memory.New())
	a := newAPI(t, store, func(c *toolgate.Config) {
		c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"dana": {"alice"}, "erin": {"bob"}}}
	})
	require.NoError(t, a.keys.AddApproverKey("dana", danaKey))
	require.NoError(t, a.keys.AddApproverKey("erin", erinKey))
	notSafe := false
	require.NoError(t, a.reg.SetTrust("goal-data", registry.Trust{RetrySafe: &notSafe}))

	q := a.quote(aliceKey, "goal-data")
	input := `{"goal":"g","step":1}`
	r := a.call(aliceKey, "goal-data", "k1", callBody(q, input))
	require.Equal(t, http.StatusInternalServerError, r.status, "%s", r.body)
	store.Dying.Store(false)
	a.clock.Advance(toolgate.DefaultIdempotencyLease + toolgate.DefaultQuoteTTL)
	r = a.call(aliceKey, "goal-data", "k1", callBody(q, input))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	exec := r.json(t)
	require.Equal(t, "ambiguous", exec["status"], "%s", r.body)
	return a, exec["id"].(string)
}

func TestResolveOverHTTP(t *testing.T) {
	t.Parallel()
	a, id := ambiguousAPI(t)
	path := "/v1/executions/" + id + "/resolve"

	r := a.do("POST", path, aliceKey, `{"outcome":"completed"}`)
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.Equal(t, "approver_required", r.errorCode(t), "a caller cannot resolve its own call")
	r = a.do("POST", path, erinKey, `{"outcome":"completed"}`)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "execution_not_found", r.errorCode(t))
	r = a.do("POST", path, danaKey, `{"outcome":"maybe"}`)
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, "invalid_request", r.errorCode(t))

	listed := a.do("GET", "/v1/executions?status=ambiguous", danaKey, "")
	require.Equal(t, http.StatusOK, listed.status, "%s", listed.body)
	assert.Len(t, listed.json(t)["executions"], 1)

	r = a.do("POST", path, danaKey, `{"outcome":"failed","note":"no such goal at the provider"}`)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	exec := r.json(t)
	assert.Equal(t, "failed", exec["status"])
	assert.Equal(t, "resolved_failed", exec["error"].(map[string]any)["code"])
	resolution := exec["resolution"].(map[string]any)
	assert.Equal(t, "failed", resolution["outcome"])
	assert.Equal(t, "dana", resolution["resolvedBy"])
	assert.Equal(t, "no such goal at the provider", resolution["note"])
	assert.Equal(t, id, r.header.Get("Toolgate-Execution-Id"))

	r = a.do("POST", path, danaKey, `{"outcome":"completed"}`)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "execution_already_resolved", r.errorCode(t))

	// The caller's key now replays the resolved execution.
	got := a.do("GET", "/v1/executions/"+id, aliceKey, "")
	require.Equal(t, http.StatusOK, got.status)
	assert.Equal(t, "failed", got.json(t)["status"])
	spend := a.do("GET", "/v1/spend", aliceKey, "")
	assert.Equal(t, "0.0000", spend.json(t)["totalUsd"], "released, not charged")
}

func TestResolvingAnExecutionThatIsNotAmbiguous(t *testing.T) {
	t.Parallel()
	a, _ := ambiguousAPI(t)
	q := a.quote(aliceKey, "exchange-rates")
	r := a.call(aliceKey, "exchange-rates", "k2", callBody(q, `{"base":"USD","quotes":"EUR"}`))
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	id := r.json(t)["id"].(string)
	r = a.do("POST", "/v1/executions/"+id+"/resolve", danaKey, `{"outcome":"failed"}`)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "execution_not_ambiguous", r.errorCode(t))
}
