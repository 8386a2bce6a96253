package toolgatetype_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetype"
)

func dec(s string) *decimal.Decimal { d := decimal.RequireFromString(s); return &d }

// TestSpendControlsJSON: the JSON form is the API's body, to the byte.
func TestSpendControlsJSON(t *testing.T) {
	t.Parallel()
	no, perHour := false, 0
	cases := []struct {
		name string
		c    toolgatetype.SpendControls
		want string
	}{
		{"nothing set: every limit null, no tools",
			toolgatetype.SpendControls{},
			`{"maxPerCallUsd":null,"dailyLimitUsd":null,"monthlyLimitUsd":null,"rateLimitPerMinute":null,"rateLimitPerHour":null}`},
		{"no tools, as an empty object",
			toolgatetype.SpendControls{Tools: map[string]toolgatetype.ToolSpendControls{}},
			`{"maxPerCallUsd":null,"dailyLimitUsd":null,"monthlyLimitUsd":null,"rateLimitPerMinute":null,"rateLimitPerHour":null,"tools":{}}`},
		{"amounts with 4 decimals, zeros set",
			toolgatetype.SpendControls{DailyLimitUSD: dec("5"), MonthlyLimitUSD: dec("0.00005"), RateLimitPerHour: &perHour,
				Tools: map[string]toolgatetype.ToolSpendControls{"echo": {Allowed: &no, MaxPerCallUSD: dec("0.1")}}},
			`{"maxPerCallUsd":null,"dailyLimitUsd":"5.0000","monthlyLimitUsd":"0.0001","rateLimitPerMinute":null,"rateLimitPerHour":0,` +
				`"tools":{"echo":{"allowed":false,"maxPerCallUsd":"0.1000","dailyLimitUsd":null,"monthlyLimitUsd":null,"rateLimitPerMinute":null,"rateLimitPerHour":null}}}`},
	}
	for _, tc := range cases {
		got, err := json.Marshal(tc.c)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, string(got), tc.name)

		var back toolgatetype.SpendControls
		require.NoError(t, json.Unmarshal(got, &back), tc.name)
		again, err := json.Marshal(back)
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(again), "%s: read back", tc.name)
	}
}

// TestSpendControlsJSONRefuses: what is not a decimal amount is
// invalid_request naming the field, and a member not known is refused.
func TestSpendControlsJSONRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, field string
	}{
		{"global amount", `{"dailyLimitUsd":"lots"}`, "dailyLimitUsd"},
		{"a tool's amount", `{"tools":{"echo":{"monthlyLimitUsd":"1,5"}}}`, "tools.echo.monthlyLimitUsd"},
	}
	for _, tc := range cases {
		var c toolgatetype.SpendControls
		err := json.Unmarshal([]byte(tc.body), &c)
		var te *toolgatetype.Error
		require.True(t, errors.As(err, &te), "%s: %v", tc.name, err)
		assert.Equal(t, toolgatetype.CodeInvalidRequest, te.Code, tc.name)
		assert.Contains(t, te.Message, tc.field+" must be a decimal amount", tc.name)
	}
	var tool toolgatetype.ToolSpendControls
	err := json.Unmarshal([]byte(`{"maxPerCallUsd":"x"}`), &tool)
	assert.True(t, toolgatetype.IsCode(err, toolgatetype.CodeInvalidRequest), "%v", err)
	assert.ErrorContains(t, err, "maxPerCallUsd must be a decimal amount")

	for _, body := range []string{`{"dailyLimit":"5"}`, `{"tools":{"echo":{"allowed":true,"daily":"1"}}}`} {
		var c toolgatetype.SpendControls
		assert.ErrorContains(t, json.Unmarshal([]byte(body), &c), "unknown field", body)
	}
	assert.ErrorContains(t, json.Unmarshal([]byte(`{"tools":{}}`), &tool), `unknown field "tools"`)
}

// TestSpendControlsJSONAbsentTools: tools absent or null reads as nil, so
// a body sent with PUT keeps the per-tool controls; an empty object reads
// as an empty map, which removes them.
func TestSpendControlsJSONAbsentTools(t *testing.T) {
	t.Parallel()
	for body, wantNil := range map[string]bool{`{}`: true, `{"tools":null}`: true, `{"tools":{}}`: false} {
		var c toolgatetype.SpendControls
		require.NoError(t, json.Unmarshal([]byte(body), &c), body)
		assert.Equal(t, wantNil, c.Tools == nil, body)
		assert.Empty(t, c.Tools, body)
	}
}
