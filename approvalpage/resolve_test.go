package approvalpage_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// newAmbiguousAPI serves a gateway in which one call of alice's, of a tool
// the operator marked not retry-safe, was taken over after its run died:
// its outcome is unknown. It returns the execution's id.
func newAmbiguousAPI(t *testing.T) (*api, string) {
	t.Helper()
	a := newApproverGateway(t)
	store := toolgatetest.NewDyingStore(memory.New())
	cfg := &toolgate.Config{Approvers: toolgatetype.StaticApprovers{Approvers: map[string][]string{"pat": {"alice"}, "sam": {"other"}}}}
	tg := toolgatetest.New(t, &toolgatetest.Options{Store: store, Config: cfg, Tools: []*registry.Tool{toolgatetest.Priced(toolgatetest.EchoTool(), "0.0500")}})
	notSafe := false
	require.NoError(t, tg.Registry.SetTrust("echo", registry.Trust{RetrySafe: &notSafe, PaymentVerified: registry.Bool(true), EndpointVerified: registry.Bool(true)}))
	a.gw, a.clock = tg.Gateway, tg.Clock
	a.srv = a.serve(nil)

	ctx := context.Background()
	q := tg.MustQuote(t, "alice", "echo")
	req := toolgatetype.CallRequest{Tool: "echo", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`),
		ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: "k1"}
	_, err := tg.Call(ctx, "alice", req)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeInternal)
	store.Dying.Store(false)
	tg.Clock.Advance(toolgate.DefaultIdempotencyLease + toolgate.DefaultQuoteTTL)
	res, err := tg.Call(ctx, "alice", req)
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusAmbiguous, res.Execution.Status, "%s", res.Body)
	tg.Upstream.RequireCalls(t, 1)
	return a, res.Execution.ID
}

// noteWithHTML is a note a person might paste, which the page must show as
// text.
const noteWithHTML = `ticket T-17 exists <b>opened</b> <script>alert("note")</script>`

// A person signs in, finds the call whose outcome is unknown, and says it
// ran: it is charged, and the page shows the note as text.
func TestApprovalPageResolvesAnAmbiguousCall(t *testing.T) {
	t.Parallel()
	a, id := newAmbiguousAPI(t)

	b := testbrowser.New(t)
	page := b.Get(a.srv.URL + "/approvals")
	page = page.Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	text := page.Text()
	assert.Contains(t, text, "Calls whose outcome is unknown")
	assert.Contains(t, text, id)
	assert.Contains(t, text, "0.0550 USD")

	form := page.Form("execution")
	assert.Equal(t, id, form.Values.Get("execution"))
	page = form.Set("note", noteWithHTML).Submit("It ran: charge it")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Contains(t, page.Text(), "as run: it is charged")
	assert.Contains(t, page.Text(), noteWithHTML, "the note is shown as the person wrote it")
	assert.NotContains(t, page.Body, "<script>alert", "and never run")
	assert.NotContains(t, page.Body, "<b>opened</b>")
	assert.Contains(t, page.Body, "&lt;script&gt;")
	assert.False(t, page.HasForm("execution"), "nothing is left to resolve")

	r := a.do("GET", "/v1/executions/"+id, aliceKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	exec := r.json(t)
	assert.Equal(t, "completed", exec["status"])
	resolution := exec["resolution"].(map[string]any)
	assert.Equal(t, "pat", resolution["resolvedBy"])
	assert.Equal(t, noteWithHTML, resolution["note"])
	r = a.do("GET", "/v1/spend", aliceKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "0.0550", r.json(t)["totalUsd"], "charged once")
}

// The Resolve form follows the approve form's rules: it must come from this
// origin, carry the session's token, and only an approver of the call's
// principal may resolve it.
func TestApprovalPageResolveResistsForgery(t *testing.T) {
	t.Parallel()
	a, id := newAmbiguousAPI(t)
	b := testbrowser.New(t)
	page := b.Get(a.srv.URL + "/approvals")
	page = page.Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status)
	csrf := page.Form("execution").Values.Get("csrf")
	require.NotEmpty(t, csrf)

	post := func(origin string, fields url.Values) int {
		req, err := http.NewRequest(http.MethodPost, a.srv.URL+"/approvals", strings.NewReader(fields.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp := b.Do(req)
		return resp.Status
	}
	resolve := url.Values{"action": {"resolve"}, "execution": {id}, "outcome": {"failed"}, "csrf": {csrf}}
	assert.Equal(t, http.StatusForbidden, post("https://evil.example", resolve), "a foreign origin")
	forged := url.Values{"action": {"resolve"}, "execution": {id}, "outcome": {"failed"}, "csrf": {"not-the-token"}}
	assert.Equal(t, http.StatusForbidden, post(a.srv.URL, forged), "a wrong token")

	r := a.do("GET", "/v1/executions?status=ambiguous", patKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Len(t, r.json(t)["executions"], 1, "nothing was resolved by the forged posts")

	// sam approves for someone else: the call does not exist for sam.
	sb := testbrowser.New(t)
	sp := sb.Get(a.srv.URL + "/approvals")
	sp = sp.Form("key").Set("key", samKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, sp.Status)
	assert.NotContains(t, sp.Text(), id)
	sp = sb.Post(sp.URL, "", url.Values{"action": {"resolve"}, "execution": {id}, "outcome": {"failed"}, "csrf": {sp.Form("action").Values.Get("csrf")}})
	assert.Equal(t, http.StatusNotFound, sp.Status)
}
