package toolgatetype_test

import (
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/toolgatetype"
)

func TestFormatUSDMatchesStringFixed(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []decimal.Decimal{
		decimal.Zero, decimal.New(0, -4), decimal.New(-0, 3), decimal.RequireFromString("25"), decimal.RequireFromString("100"),
		decimal.RequireFromString("0.10"), decimal.NewFromInt(1_000_000_000), decimal.RequireFromString("0.0001"),
		decimal.RequireFromString("-0.0001"), decimal.RequireFromString("0.00005"), decimal.RequireFromString("-0.00005"),
		decimal.RequireFromString("12345678901234.5678"), decimal.RequireFromString("99999999999999.9999"),
		decimal.RequireFromString("999999999999999.9999"), decimal.New(1, 4), decimal.New(-7, 4), decimal.New(123, 12),
		decimal.RequireFromString("1e-30"),
	}
	for i := 0; i < 5000; i++ {
		cases = append(cases, decimal.New(rng.Int64N(2_000_000_000_000)-1_000_000_000_000, int32(rng.IntN(13)-8)))
	}
	for _, d := range cases {
		if got, want := toolgatetype.FormatUSD(d), d.StringFixed(4); got != want {
			t.Errorf("FormatUSD(%s) = %s, want %s", d.String(), got, want)
		}
	}
}
