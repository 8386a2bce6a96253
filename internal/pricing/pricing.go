// Package pricing computes what one call of a tool costs under the
// gateway: the provider's price, the gateway's fee on it and their total.
package pricing

import (
	"github.com/shopspring/decimal"
)

// DefaultFeeRate is the gateway fee as a share of the provider's price.
var DefaultFeeRate = decimal.RequireFromString("0.10")

// Amounts is the price, the gateway fee and the total of one call.
type Amounts struct {
	Price, Fee, Total decimal.Decimal
}

// WithFee computes the fee as price × rate rounded half away from zero
// to 4 decimals, and the total as their sum, so that displayed amounts always
// add up exactly.
func WithFee(price, rate decimal.Decimal) Amounts {
	price = price.Round(4)
	fee := price.Mul(rate).Round(4)
	return Amounts{Price: price, Fee: fee, Total: price.Add(fee)}
}
