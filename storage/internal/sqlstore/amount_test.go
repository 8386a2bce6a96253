package sqlstore_test

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage/internal/sqlstore"
)

// TestAmountTextKeepsScale: an amount reads back with the digits it was
// stored with, trailing zeros included.
func TestAmountTextKeepsScale(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"25", "25.0000", "0.1", "0.00005", "1000.5", "-3.10", "0"} {
		d := decimal.RequireFromString(s)
		text := sqlstore.AmountText(&d)
		require.NotNil(t, text)
		assert.Equal(t, s, *text)
		back, err := sqlstore.ParseAmount(text)
		require.NoError(t, err)
		assert.Equal(t, s, *sqlstore.AmountText(back))
	}
	assert.Nil(t, sqlstore.AmountText(nil))
	back, err := sqlstore.ParseAmount(nil)
	require.NoError(t, err)
	assert.Nil(t, back)
	bad := "lots"
	_, err = sqlstore.ParseAmount(&bad)
	assert.ErrorContains(t, err, `stored amount "lots"`)
}
