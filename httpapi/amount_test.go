package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/httpapi"
)

// TestSpendControlsAmountsAreBounded: a spend limit has at most 20 digits
// before the point and 4 after. One past either bound, or a limit of
// 900,000 digits (which once cost seconds of CPU to take), is 400
// invalid_request naming the field, and the limits stored stay as they
// were; 20 and 4 digits are taken.
func TestSpendControlsAmountsAreBounded(t *testing.T) {
	t.Parallel()
	a := newAPI(t, nil)
	// The default body cap (1 MiB), so that 900,000 digits reach the parser.
	a.srv = httptest.NewServer(httpapi.NewHandler(a.gw, &httpapi.Options{Authenticator: a.keys}))
	t.Cleanup(a.srv.Close)
	a.client = a.srv.Client()

	const widest = "99999999999999999999.9999"
	r := a.do("PUT", "/v1/spend-controls", aliceKey, `{"dailyLimitUsd":"`+widest+`","tools":{"goal-data":{"maxPerCallUsd":"`+widest+`"}}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	assert.Equal(t, widest, r.json(t)["dailyLimitUsd"])
	stored := string(a.do("GET", "/v1/spend-controls", aliceKey, "").body)
	assert.Contains(t, stored, `"maxPerCallUsd":"`+widest+`"`)

	million := strings.Repeat("9", 900_000)
	for _, tc := range []struct {
		name, path, body, field string
	}{
		{"21 digits before the point", "/v1/spend-controls", `{"dailyLimitUsd":"123456789012345678901"}`, "dailyLimitUsd"},
		{"21 digits with decimals", "/v1/spend-controls", `{"monthlyLimitUsd":"100000000000000000000.0000"}`, "monthlyLimitUsd"},
		{"5 after the point", "/v1/spend-controls", `{"maxPerCallUsd":"1.00001"}`, "maxPerCallUsd"},
		{"900,000 digits", "/v1/spend-controls", `{"monthlyLimitUsd":"` + million + `"}`, "monthlyLimitUsd"},
		{"900,000 digits for a tool", "/v1/spend-controls", `{"tools":{"goal-data":{"dailyLimitUsd":"` + million + `"}}}`,
			"tools.goal-data.dailyLimitUsd"},
		{"900,000 decimals", "/v1/spend-controls", `{"dailyLimitUsd":"0.` + million + `"}`, "dailyLimitUsd"},
		{"21 digits on the tool's route", "/v1/spend-controls/tools/goal-data", `{"maxPerCallUsd":"999999999999999999999"}`, "maxPerCallUsd"},
		{"900,000 digits on the tool's route", "/v1/spend-controls/tools/goal-data", `{"monthlyLimitUsd":"` + million + `"}`, "monthlyLimitUsd"},
	} {
		r := a.do("PUT", tc.path, aliceKey, tc.body)
		require.Equal(t, 400, r.status, "%s: %.300s", tc.name, r.body)
		assert.Equal(t, "invalid_request", r.errorCode(t), tc.name)
		msg := r.json(t)["error"].(map[string]any)["message"].(string)
		assert.True(t, strings.HasPrefix(msg, tc.field+" "), "%s: the field is named: %s", tc.name, msg)
		assert.Less(t, len(r.body), 1000, "%s: the amount is not written back", tc.name)
	}
	assert.JSONEq(t, stored, string(a.do("GET", "/v1/spend-controls", aliceKey, "").body), "nothing refused was stored")
}
