package toolgate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetype"
)

// TestSpendControlsFromGoAreBounded: limits a Go program sets as decimals,
// never parsed from text, keep the bounds of every amount (20 digits
// before the point, 4 after): invalid_request naming the field, and
// nothing stored.
func TestSpendControlsFromGoAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable})
	ctx := context.Background()
	huge := decimal.New(1, 900_000)
	for _, tc := range []struct {
		name  string
		set   toolgatetype.SpendControls
		field string
	}{
		{"21 digits", toolgatetype.SpendControls{DailyLimitUSD: dec("100000000000000000000")}, "dailyLimitUsd"},
		{"900,000 digits", toolgatetype.SpendControls{MonthlyLimitUSD: &huge}, "monthlyLimitUsd"},
		{"a tool's, 21 digits", toolgatetype.SpendControls{Tools: map[string]toolgatetype.ToolSpendControls{
			"echo": {MaxPerCallUSD: dec("123456789012345678901.5")}}}, "tools.echo.maxPerCallUsd"},
	} {
		err := e.gw.SetSpendControls(ctx, "alice", tc.set)
		var te *toolgatetype.Error
		require.True(t, errors.As(err, &te), "%s: %v", tc.name, err)
		assert.Equal(t, toolgatetype.CodeInvalidRequest, te.Code, tc.name)
		assert.Equal(t, tc.field+" must have at most 20 digits before the point", te.Message, tc.name)
	}
	stored, err := e.gw.SpendControls(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.SpendControls{}, stored)

	require.NoError(t, e.gw.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: dec("99999999999999999999.9999")}))
}
