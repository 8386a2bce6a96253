package toolgatehttp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

const (
	agentKey = "tg_test_agent"
	patKey   = "tg_test_pat_approver"
)

// TestOneHandlerServesEverything: the JSON API, the approval pages and the
// documentation answer on one handler under one prefix, every wrong method
// and unknown path with the API's JSON error, and the links each part
// gives lead to the others.
func TestOneHandlerServesEverything(t *testing.T) {
	t.Parallel()
	tg := toolgatetest.New(t, &toolgatetest.Options{Config: &toolgate.Config{Approvers: toolgatetype.StaticApprovers{
		Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
		Approvers: map[string][]string{"pat": {"agent"}},
	}}})
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("agent", agentKey))
	require.NoError(t, keys.AddApproverKey("pat", patKey))
	mux := http.NewServeMux()
	mux.Handle("/gateway/", http.StripPrefix("/gateway", toolgatehttp.NewHandler(tg.Gateway, &toolgatehttp.Options{Authenticator: keys})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base := srv.URL + "/gateway"

	do := func(method, url, key, body string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	decode := func(b []byte) map[string]any {
		t.Helper()
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
		return m
	}

	for _, c := range []struct {
		method, path string
		status       int
		contentType  string
		code         string // of a JSON error
	}{
		{"GET", "/healthz", 200, "application/json", ""},
		{"GET", "/v1/registry/tools/echo", 200, "application/json", ""},
		{"GET", "/v1/registry/tools/echo/docs", 200, "application/json", ""},
		{"GET", "/v1/registry/llms.txt", 200, "text/plain; charset=utf-8", ""},
		{"GET", "/v1/registry/manifest.schema.json", 200, "application/schema+json", ""},
		{"GET", "/tools/echo", 200, "text/html; charset=utf-8", ""},
		{"GET", "/approvals", 200, "text/html; charset=utf-8", ""},
		{"GET", "/.well-known/toolgate-receipt-keys", 200, "application/json", ""},
		{"GET", "/v1/receipts", 401, "application/json", "unauthorized"},
		{"POST", "/.well-known/toolgate-receipt-keys", 405, "application/json", "method_not_allowed"},
		{"DELETE", "/v1/tools/echo/quote", 405, "application/json", "method_not_allowed"},
		{"POST", "/tools/echo", 405, "application/json", "method_not_allowed"},
		{"PUT", "/approvals", 405, "application/json", "method_not_allowed"},
		{"GET", "/nothing/here", 404, "application/json", "not_found"},
	} {
		resp, body := do(c.method, base+c.path, "", "")
		assert.Equal(t, c.status, resp.StatusCode, "%s %s: %s", c.method, c.path, body)
		assert.Equal(t, c.contentType, resp.Header.Get("Content-Type"), "%s %s", c.method, c.path)
		if c.code != "" {
			assert.Equal(t, c.code, decode(body)["error"].(map[string]any)["code"], "%s %s", c.method, c.path)
		}
	}

	// The receipt keys are public, and the agent's chain is its own.
	resp, body := do("GET", base+"/.well-known/toolgate-receipt-keys", "", "")
	assert.Contains(t, resp.Header.Get("Cache-Control"), "max-age=")
	assert.Equal(t, toolgatetype.ReceiptKeyCurrent, decode(body)["keys"].([]any)[0].(map[string]any)["status"])
	resp, body = do("GET", base+"/v1/receipts", agentKey, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.JSONEq(t, `{"receipts":[]}`, string(body))

	// An entry's documentation links, and an approval request's approveUrl,
	// lead to pages the same handler serves.
	_, body = do("GET", base+"/v1/registry/tools/echo", "", "")
	for _, link := range decode(body)["documentation"].(map[string]any) {
		resp, body := do("GET", base+link.(string), "", "")
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", link, body)
	}
	_, body = do("POST", base+"/v1/tools/echo/quote", agentKey, "{}")
	quoteID := decode(body)["quote"].(map[string]any)["id"].(string)
	resp, body = do("POST", base+"/v1/approval-requests", agentKey, `{"quoteId":"`+quoteID+`","input":{"v":"hi"}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", body)
	approveURL := decode(body)["approveUrl"].(string)
	assert.True(t, strings.HasPrefix(approveURL, base+"/approvals/"), approveURL)
	resp, body = do("GET", approveURL, "", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "An approval request is waiting")
}
