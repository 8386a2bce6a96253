package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerBoundsAmounts: over the server's API, on each durable store,
// spend limits of 20 digits before the point and 4 after are kept and read
// back as set; one of 900,000 digits is 400 invalid_request naming the
// field, and changes nothing.
func TestServerBoundsAmounts(t *testing.T) {
	t.Parallel()
	stores := map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "toolgate.db")}
	if url := os.Getenv("TOOLGATE_TEST_POSTGRES_URL"); url != "" {
		stores["postgres"] = url
	}
	for name, storage := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			key := randomKey(t, "tg_test_bounds_")
			path := writeConfig(t, map[string]any{
				"listen":  "127.0.0.1:0",
				"storage": storage,
				// A principal of its own, so that runs sharing the database never meet.
				"principals": []any{map[string]any{"id": randomKey(t, "bounds-e2e-"), "apiKeys": []string{key}}},
			})
			srv, base := startServer(t, []string{"-config", path, "-offline"})
			c := client{t: t, base: base, key: key}

			const widest = "99999999999999999999.9999"
			r := c.do(http.MethodPut, "/v1/spend-controls", map[string]any{"monthlyLimitUsd": widest,
				"tools": map[string]any{"goal-data": map[string]any{"dailyLimitUsd": widest}}})
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			stored := c.do(http.MethodGet, "/v1/spend-controls", nil)
			assert.Equal(t, widest, stored.json(t)["monthlyLimitUsd"], "%s", stored.body)
			assert.Contains(t, string(stored.body), `"dailyLimitUsd":"`+widest+`"`)

			r = c.do(http.MethodPut, "/v1/spend-controls", map[string]any{"tools": map[string]any{
				"goal-data": map[string]any{"maxPerCallUsd": strings.Repeat("9", 900_000)}}})
			require.Equal(t, http.StatusBadRequest, r.status, "%.300s", r.body)
			e := r.json(t)["error"].(map[string]any)
			assert.Equal(t, "invalid_request", e["code"])
			assert.Equal(t, "tools.goal-data.maxPerCallUsd must have at most 20 digits before the point", e["message"])
			assert.Equal(t, string(stored.body), string(c.do(http.MethodGet, "/v1/spend-controls", nil).body))
			assert.Equal(t, 0, srv.stop(exitTimeout))
		})
	}
}

// TestServerBoundsMCPBatches: a session of the revision that takes
// JSON-RPC batches (2025-03-26) on the server's /mcp is refused a batch of
// 101 messages, with 400 and a JSON-RPC error, and takes one of 100.
func TestServerBoundsMCPBatches(t *testing.T) {
	t.Parallel()
	key := randomKey(t, "tg_test_batch_")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{key}}},
	})
	srv, base := startServer(t, []string{"-config", path, "-offline"})
	post := func(session, body string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	require.Equal(t, http.StatusAccepted, post(session, `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`).StatusCode)

	pings := func(n int) string {
		msgs := make([]string, n)
		for i := range msgs {
			msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1)
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}
	refused := post(session, pings(101))
	assert.Equal(t, http.StatusBadRequest, refused.StatusCode)
	body := response{}
	body.body = []byte(readAll(t, refused))
	assert.Equal(t, "a JSON-RPC batch may hold at most 100 messages", body.json(t)["error"].(map[string]any)["message"])
	taken := post(session, pings(100))
	assert.Equal(t, http.StatusOK, taken.StatusCode)
	answers := readAll(t, taken)
	assert.Equal(t, 100, strings.Count(answers, `"result":{}`), "%.500s", answers)
	assert.Equal(t, 0, srv.stop(exitTimeout))
}
