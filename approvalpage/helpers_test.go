package approvalpage_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// The keys of the page tests: agent is an agent whose calls pat, a person,
// approves; sam approves for someone else; alice is a caller in caller mode.
const (
	aliceKey = "tg_test_alice"
	agentKey = "tg_test_agent"
	patKey   = "tg_test_pat_approver"
	samKey   = "tg_test_sam_approver"
)

// api is a gateway served whole, the API beside the pages, as a browser
// and an agent reach it.
type api struct {
	t     *testing.T
	srv   *httptest.Server
	gw    *toolgate.Gateway
	keys  *apikey.KeyStore
	clock *toolgatetest.FakeClock
}

// newApproverAPI serves a gateway whose principal agent is in approver
// mode, with alice in caller mode, pat approving for both, and sam for
// another principal only.
func newApproverAPI(t *testing.T) *api {
	t.Helper()
	a := newApproverGateway(t)
	a.srv = a.serve(nil)
	return a
}

// newApproverGateway is newApproverAPI's gateway and keys, not yet served.
func newApproverGateway(t *testing.T) *api {
	t.Helper()
	cfg := &toolgate.Config{Approvers: toolgatetype.StaticApprovers{
		Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
		Approvers: map[string][]string{"pat": {"agent", "alice"}, "sam": {"other"}},
	}}
	tg := toolgatetest.New(t, &toolgatetest.Options{Config: cfg})
	require.NoError(t, tg.Registry.SetTrust("goal-data", registry.Trust{PaymentVerified: registry.Bool(true)}))
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", aliceKey))
	require.NoError(t, keys.AddKey("agent", agentKey))
	require.NoError(t, keys.AddApproverKey("pat", patKey))
	require.NoError(t, keys.AddApproverKey("sam", samKey))
	return &api{t: t, gw: tg.Gateway, keys: keys, clock: tg.Clock}
}

// serve starts a server over the gateway, one instance of it, with its
// sessions in sessions (nil: its own memory).
func (a *api) serve(sessions approvalpage.SessionStore) *httptest.Server {
	a.t.Helper()
	srv := httptest.NewServer(toolgatehttp.NewHandler(a.gw, &toolgatehttp.Options{Authenticator: a.keys, Sessions: sessions, MaxBodyBytes: 4096}))
	a.t.Cleanup(srv.Close)
	return srv
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// do sends a request to the API with key, and a JSON body if any.
func (a *api) do(method, path, key, body string, headers ...string) reply {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := a.srv.Client().Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

type quoted struct {
	Quote struct {
		ID             string `json:"id"`
		ManifestDigest string `json:"manifestDigest"`
	} `json:"quote"`
}

// askApproval quotes tool for the caller and asks approval of a call with input.
func (a *api) askApproval(key, tool, input string) (quoted, map[string]any) {
	a.t.Helper()
	r := a.do("POST", "/v1/tools/"+tool+"/quote", key, "{}")
	require.Equal(a.t, http.StatusCreated, r.status, "%s", r.body)
	var q quoted
	require.NoError(a.t, json.Unmarshal(r.body, &q))
	r = a.do("POST", "/v1/approval-requests", key, `{"quoteId":"`+q.Quote.ID+`","input":`+input+`}`)
	require.Equal(a.t, http.StatusCreated, r.status, "%s", r.body)
	return q, r.json(a.t)
}

// call calls tool under q with input, carrying the digest and grant.
func (a *api) call(key, tool, idemKey string, q quoted, input, grant string) reply {
	a.t.Helper()
	body := `{"quoteId":"` + q.Quote.ID + `","input":` + input + `,"approval":{"manifestDigest":"` + q.Quote.ManifestDigest + `","grantId":"` + grant + `"}}`
	return a.do("POST", "/v1/tools/"+tool+"/call", key, body, "Idempotency-Key", idemKey)
}

// requestStatus is the status of approval request id, as its approver reads it.
func (a *api) requestStatus(id string) string {
	a.t.Helper()
	r := a.do("GET", "/v1/approval-requests/"+id, patKey, "")
	require.Equal(a.t, http.StatusOK, r.status, "%s", r.body)
	return r.json(a.t)["status"].(string)
}

func nopBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }
