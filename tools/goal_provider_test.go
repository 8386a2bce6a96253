package tools_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools"
)

func TestGoalProviderObservations(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want string
	}{
		{"default target 3, step 1", `{"goal":"g","step":1}`, `{"goal":"g","step":1,"datum":"verified-demo-datum-1","goalAchieved":false}`},
		{"default target 3, step 2", `{"goal":"g","step":2}`, `{"goal":"g","step":2,"datum":"verified-demo-datum-2","goalAchieved":false}`},
		{"default target 3, step 3", `{"goal":"g","step":3}`, `{"goal":"g","step":3,"datum":"verified-demo-datum-3","goalAchieved":true}`},
		{"past the default target", `{"goal":"g","step":5}`, `{"goal":"g","step":5,"datum":"verified-demo-datum-5","goalAchieved":true}`},
		{"target 1 at step 1", `{"goal":"g","step":1,"targetSteps":1}`, `{"goal":"g","step":1,"datum":"verified-demo-datum-1","goalAchieved":true}`},
		{"target 5 at step 4", `{"goal":"g","step":4,"targetSteps":5}`, `{"goal":"g","step":4,"datum":"verified-demo-datum-4","goalAchieved":false}`},
		{"integral float step", `{"goal":"g","step":2.0,"targetSteps":2}`, `{"goal":"g","step":2,"datum":"verified-demo-datum-2","goalAchieved":true}`},
		{"500-character goal", `{"goal":"` + strings.Repeat("ü", 500) + `","step":1}`, `{"goal":"` + strings.Repeat("ü", 500) + `","step":1,"datum":"verified-demo-datum-1","goalAchieved":false}`},
	}
	h := tools.NewGoalProvider()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/goal-data", strings.NewReader(tc.body)))
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			assert.JSONEq(t, tc.want, rec.Body.String())
		})
	}
}

func TestGoalProviderRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"not JSON", http.MethodPost, "/v1/goal-data", `goal=g&step=1`, http.StatusBadRequest, "invalid_request"},
		{"empty body", http.MethodPost, "/v1/goal-data", ``, http.StatusBadRequest, "invalid_request"},
		{"unknown field", http.MethodPost, "/v1/goal-data", `{"goal":"g","step":1,"approved":true}`, http.StatusBadRequest, "invalid_request"},
		{"trailing data", http.MethodPost, "/v1/goal-data", `{"goal":"g","step":1}{}`, http.StatusBadRequest, "invalid_request"},
		{"missing goal", http.MethodPost, "/v1/goal-data", `{"step":1}`, http.StatusBadRequest, "invalid_request"},
		{"empty goal", http.MethodPost, "/v1/goal-data", `{"goal":"","step":1}`, http.StatusBadRequest, "invalid_request"},
		{"goal of 501 characters", http.MethodPost, "/v1/goal-data", `{"goal":"` + strings.Repeat("a", 501) + `","step":1}`, http.StatusBadRequest, "invalid_request"},
		{"missing step", http.MethodPost, "/v1/goal-data", `{"goal":"g"}`, http.StatusBadRequest, "invalid_request"},
		{"step 0", http.MethodPost, "/v1/goal-data", `{"goal":"g","step":0}`, http.StatusBadRequest, "invalid_request"},
		{"step 6", http.MethodPost, "/v1/goal-data", `{"goal":"g","step":6}`, http.StatusBadRequest, "invalid_request"},
		{"fractional step", http.MethodPost, "/v1/goal-data", `{"goal":"g","step":1.5}`, http.StatusBadRequest, "invalid_request"},
		{"step as text", http.MethodPost, "/v1/goal-data", `{"goal":"g","step":"1"}`, http.StatusBadRequest, "invalid_request"},
		{"targetSteps 0", http.MethodPost, "/v1/goal-data", `{"goal":"g","step":1,"targetSteps":0}`, http.StatusBadRequest, "invalid_request"},
		{"body over 64 KiB", http.MethodPost, "/v1/goal-data", `{"goal":"` + strings.Repeat("a", 70<<10) + `","step":1}`, http.StatusBadRequest, "invalid_request"},
		{"GET", http.MethodGet, "/v1/goal-data", ``, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"PUT", http.MethodPut, "/v1/goal-data", `{"goal":"g","step":1}`, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"other path", http.MethodPost, "/v1/goal", `{"goal":"g","step":1}`, http.StatusNotFound, "not_found"},
	}
	h := tools.NewGoalProvider()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
			assert.Equal(t, tc.status, rec.Code)
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			var got struct {
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got), rec.Body.String())
			assert.Equal(t, tc.code, got.Error.Code)
			assert.NotEmpty(t, got.Error.Message)
			if tc.status == http.StatusMethodNotAllowed {
				assert.Equal(t, http.MethodPost, rec.Header().Get("Allow"))
			}
		})
	}
}
