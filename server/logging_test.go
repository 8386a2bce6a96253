package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLogRequestsLogsNoSecrets(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h := logRequests(slog.New(slog.NewJSONHandler(&logs, nil)), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("short and stout"))
	}))
	req := httptest.NewRequest(http.MethodPost, "/v1/tools/x/quote?api_key=tg_in_query", nil)
	req.Header.Set("Authorization", "Bearer tg_in_header")
	req.Header.Set("Idempotency-Key", "idem-secretish")
	h.ServeHTTP(httptest.NewRecorder(), req)

	for _, secret := range []string{"tg_in_query", "tg_in_header", "idem-secretish"} {
		assert.NotContains(t, logs.String(), secret)
	}
	var rec map[string]any
	require.NoError(t, json.Unmarshal(logs.Bytes(), &rec))
	assert.Equal(t, "request", rec["msg"])
	assert.Equal(t, "POST", rec["method"])
	assert.Equal(t, "/v1/tools/x/quote", rec["path"])
	assert.EqualValues(t, http.StatusTeapot, rec["status"])
	assert.EqualValues(t, len("short and stout"), rec["bytes"])
	assert.Contains(t, rec, "durationMs")
}
