package approvalpage_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/internal/pagestyle"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// rlo is U+202E RIGHT-TO-LEFT OVERRIDE: what follows it is drawn right to
// left, so "moc.live@" + rlo + "kcatta" reads as "attack@evil.com".
const rlo = "\u202e"

// bidiInput is an input whose address reads one way and is another.
const bidiInput = `{"to":"moc.live@` + rlo + `kcatta","note":"zero` + "\u200b" + `width"}`

// bidiAPI serves a gateway where the caller, the tool's name and the
// approver's name carry invisible characters too.
func bidiAPI(t *testing.T) *api {
	t.Helper()
	principal := "agent" + rlo + "lave"
	cfg := &toolgate.Config{Approvers: toolgatetype.StaticApprovers{
		Modes:     map[string]toolgatetype.ApprovalMode{principal: toolgatetype.ApprovalModeApprover},
		Approvers: map[string][]string{"pat" + "\u2066": {principal}},
	}}
	tool := toolgatetest.Priced(toolgatetest.EchoTool(), "0.2500")
	tool.Name = "Echo " + rlo + "ecivres"
	// Any object: a tool that writes files takes a path and a content.
	tool.InputSchema = json.RawMessage(`{"type":"object"}`)
	tg := toolgatetest.New(t, &toolgatetest.Options{Config: cfg, Tools: []*registry.Tool{tool}})
	require.NoError(t, tg.Registry.SetTrust("echo", registry.Trust{PaymentVerified: registry.Bool(true), EndpointVerified: registry.Bool(true)}))
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey(principal, agentKey))
	require.NoError(t, keys.AddApproverKey("pat"+"\u2066", patKey))
	a := &api{t: t, gw: tg.Gateway, keys: keys, clock: tg.Clock}
	a.srv = httptest.NewServer(toolgatehttp.NewHandler(a.gw, &toolgatehttp.Options{Authenticator: keys, MaxBodyBytes: 64 << 10}))
	t.Cleanup(a.srv.Close)
	return a
}

// Every invisible character a caller, a provider or an approver supplied
// reaches the page as its escape, in the input (summary and full view),
// the caller's id, the tool's name and the approver's, on the request's
// page and on the list; and each value is isolated.
func TestApprovalPagesShowInvisibleCharactersAsEscapes(t *testing.T) {
	t.Parallel()
	a := bidiAPI(t)
	_, req := a.askApproval(agentKey, "echo", bidiInput)
	id := req["id"].(string)

	b, page := a.signedIn(id, patKey)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Equal(t, -1, strings.IndexFunc(page.Body, pagestyle.Invisible), "no invisible character reaches the page raw")
	text := page.Text()
	for _, want := range []string{
		`to: "moc.live@\u202Ekcatta"`,          // the summary
		`"to": "moc.live@\u202Ekcatta"`,        // the full input
		`note: "zero\u200Bwidth"`,              // a zero-width space
		`agent\u202Elave`,                      // the caller
		`Echo \u202Eecivres`,                   // the tool's name
		`Approve a call of Echo \u202Eecivres`, // the heading
		`pat\u2066`,                            // the approver
		"2 fields",
	} {
		assert.Contains(t, text, want)
	}
	for _, isolated := range []string{
		`<bdi>&#34;moc.live@\u202Ekcatta&#34;</bdi>`,
		`<bdi>Echo \u202Eecivres</bdi>`,
		`<code>agent\u202Elave</code>`,
		`<strong>Echo \u202Eecivres</strong>`,
	} {
		assert.Contains(t, page.Body, isolated)
	}
	assert.Contains(t, page.Body, "bdi,code,strong,.tag{unicode-bidi:isolate}", "code and strong isolate as bdi does")

	list := b.Get(a.srv.URL + "/approvals")
	require.Equal(t, http.StatusOK, list.Status, list.Body)
	assert.Equal(t, -1, strings.IndexFunc(list.Body, pagestyle.Invisible), "nor the list")
	assert.Contains(t, list.Text(), `agent\u202Elave`)
	assert.Contains(t, list.Text(), `Echo \u202Eecivres`)
}
