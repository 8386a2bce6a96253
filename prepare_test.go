package toolgate_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/internal/probe"
	"github.com/toolgate/toolgate/toolgatetype"
)

// once is what a door should cost the core for one call: the tool looked
// up, its input put in canonical form and validated, each exactly once.
var once = probe.Counts{Lookups: 1, Canonicalizations: 1, InputValidations: 1}

// TestAnHTTPCallPreparesOnce counts what one call over the HTTP API asks
// of the core, the quote before it aside. Not parallel: the probe's counts
// are the whole process's.
func TestAnHTTPCallPreparesOnce(t *testing.T) {
	e := newEnv(t, []toolSpec{callable})
	keys := apikey.NewKeyStore()
	require.NoError(t, keys.AddKey("alice", "tg_test_alice"))
	srv := httptest.NewServer(httpapi.NewHandler(e.gw, &httpapi.Options{Authenticator: keys}))
	t.Cleanup(srv.Close)
	post := func(path, key, body string) map[string]any {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tg_test_alice")
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Less(t, resp.StatusCode, 300, "%s", raw)
		var out map[string]any
		require.NoError(t, json.Unmarshal(raw, &out))
		return out
	}
	q := post("/v1/tools/echo/quote", "", "")
	quote := q["quote"].(map[string]any)

	stop := probe.Start()
	res := post("/v1/tools/echo/call", "k1", `{"quoteId":"`+quote["id"].(string)+`","input":{"v":"hi"},"approval":{"manifestDigest":"`+quote["manifestDigest"].(string)+`"}}`)
	counts := stop()
	assert.Equal(t, string(toolgatetype.StatusCompleted), res["status"], "%v", res)
	assert.Equal(t, once, counts)
}

// TestCallToolPreparesOnce counts what one CallTool asks of the core,
// its quote included: the quote is of the version the call looked up.
func TestCallToolPreparesOnce(t *testing.T) {
	e := newEnv(t, []toolSpec{callable})
	ctx := context.Background()
	digest := *e.quote("alice", "echo").Quote.ManifestDigest

	stop := probe.Start()
	out := e.gw.CallTool(ctx, "alice", toolCall("echo", "hi", "k1", &toolgatetype.CallerApproval{ManifestDigest: digest}))
	counts := stop()
	require.Nil(t, out.Refusal)
	require.NotNil(t, out.Result)
	assert.Equal(t, toolgatetype.StatusCompleted, out.Result.Execution.Status)
	assert.Equal(t, once, counts)
}
