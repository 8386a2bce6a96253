package toolgatetype_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetype"
)

// TestParseAmountBounds: at most 20 digits before the point and 4 after,
// whatever way the amount is written; a million digits is refused as out
// of bounds, not read.
func TestParseAmountBounds(t *testing.T) {
	t.Parallel()
	million := strings.Repeat("9", 900_000)
	for _, tc := range []struct {
		in   string
		want error // nil: accepted
	}{
		{"0", nil},
		{"10.0000", nil},
		{"99999999999999999999.9999", nil},
		{"-99999999999999999999.9999", nil}, // the sign is the caller's to refuse
		{"00000000000000000000099999999999999999999.9999", nil},
		{"1.00000", nil}, // no fifth decimal, only a zero
		{"1e19", nil},
		{"0e-1000", nil},
		{"100000000000000000000", toolgatetype.ErrAmountTooLarge},
		{"999999999999999999999.0", toolgatetype.ErrAmountTooLarge},
		{"1e20", toolgatetype.ErrAmountTooLarge},
		{"1e1000", toolgatetype.ErrAmountTooLarge},
		{"0.00001", toolgatetype.ErrAmountTooPrecise},
		{"1.00010001", toolgatetype.ErrAmountTooPrecise},
		{"1e-5", toolgatetype.ErrAmountTooPrecise},
		{"1e-1000", toolgatetype.ErrAmountTooPrecise},
		{million, toolgatetype.ErrAmountTooLarge},
		{"-" + million, toolgatetype.ErrAmountTooLarge},
		{"0." + million, toolgatetype.ErrAmountTooPrecise},
		{"1" + strings.Repeat("0", 100) + ".5", toolgatetype.ErrAmountTooLarge},
		{"1." + strings.Repeat("0", 100), toolgatetype.ErrAmountOutOfBounds}, // padded past reason
		{"lots", toolgatetype.ErrNotAmount},
		{"", toolgatetype.ErrNotAmount},
		{million + "x", toolgatetype.ErrNotAmount},
		{million + "e5", toolgatetype.ErrNotAmount},
	} {
		name := tc.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		d, err := toolgatetype.ParseAmount(tc.in)
		if tc.want == nil {
			require.NoError(t, err, name)
			assert.True(t, d.Equal(decimal.RequireFromString(tc.in)), name)
			continue
		}
		assert.ErrorIs(t, err, tc.want, name)
		if !errors.Is(tc.want, toolgatetype.ErrNotAmount) {
			assert.ErrorIs(t, err, toolgatetype.ErrAmountOutOfBounds, name)
		}
	}
}

// TestCheckAmountBounds: amounts a Go program builds as decimals keep the
// same bounds as those read from text.
func TestCheckAmountBounds(t *testing.T) {
	t.Parallel()
	assert.NoError(t, toolgatetype.CheckAmount(decimal.RequireFromString("99999999999999999999.9999")))
	assert.NoError(t, toolgatetype.CheckAmount(decimal.New(500000, -9))) // 0.000500000: only zeros past the fourth decimal
	assert.ErrorIs(t, toolgatetype.CheckAmount(decimal.New(1, 20)), toolgatetype.ErrAmountTooLarge)
	assert.ErrorIs(t, toolgatetype.CheckAmount(decimal.New(-1, 20)), toolgatetype.ErrAmountTooLarge)
	assert.ErrorIs(t, toolgatetype.CheckAmount(decimal.New(5, -5)), toolgatetype.ErrAmountTooPrecise)
}
