package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/internal/testproc"
)

func TestMountedGatewayBesideTheAppsOwnRoutes(t *testing.T) {
	var logs testproc.SyncBuffer
	app, err := newApp(t.Context(), &logs)
	require.NoError(t, err)
	srv := httptest.NewServer(app)
	defer srv.Close()

	do := func(method, path, body string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		// The app's middleware applies to its own routes and the gateway's alike.
		assert.Equal(t, "mount-example", resp.Header.Get("X-Served-By"), "%s %s", method, path)
		return resp, b
	}
	decode := func(b []byte) map[string]any {
		t.Helper()
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
		return m
	}

	// The application's own routes still work.
	resp, body := do(http.MethodGet, "/", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "existing application")
	resp, body = do(http.MethodGet, "/status", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", decode(body)["status"])

	// The gateway answers under /gateway/.
	resp, body = do(http.MethodGet, "/gateway/healthz", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	resp, body = do(http.MethodGet, "/gateway/v1/registry/tools", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.EqualValues(t, 5, decode(body)["total"])

	// Documentation links point under the prefix, where the gateway really is.
	resp, body = do(http.MethodGet, "/gateway/v1/registry/tools/earthquake-search/docs", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"`+srv.URL+`/gateway/v1/registry/tools/earthquake-search/openapi.json"`)

	auth := "Bearer " + demoKey
	resp, body = do(http.MethodPost, "/gateway/v1/tools/earthquake-search/quote", "", "Authorization", auth)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", body)
	q := decode(body)["quote"].(map[string]any)

	call := `{"quoteId":"` + q["id"].(string) + `","input":{"starttime":"2024-09-25"},"approval":{"manifestDigest":"` + q["manifestDigest"].(string) + `"}}`
	resp, body = do(http.MethodPost, "/gateway/v1/tools/earthquake-search/call", call,
		"Authorization", auth, "Content-Type", "application/json", "Idempotency-Key", "mount-1")
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "completed", decode(body)["status"], "%s", body)

	// Unknown paths under the prefix get the gateway's JSON 404, not the app's.
	resp, body = do(http.MethodGet, "/gateway/nope", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "not_found", decode(body)["error"].(map[string]any)["code"])

	// One log line per request, own routes and gateway alike, and never the key.
	text := logs.String()
	for _, line := range []string{"app: GET / 200", "app: GET /status 200", "app: GET /gateway/v1/registry/tools 200",
		"app: POST /gateway/v1/tools/earthquake-search/quote 201", "app: POST /gateway/v1/tools/earthquake-search/call 200"} {
		assert.Contains(t, text, line+"\n")
	}
	assert.NotContains(t, text, demoKey)
}
