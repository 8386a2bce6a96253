package toolgate

import (
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/toolgatetype"
)

// defaultFeeRate is the gateway fee as a share of the provider's price.
var defaultFeeRate = decimal.RequireFromString("0.10")

// amounts is the price, the gateway fee and the total of one call.
type amounts struct {
	Price, Fee, Total decimal.Decimal
}

// priceWithFee computes the fee as price × rate rounded half away from zero
// to 4 decimals, and the total as their sum, so that displayed amounts always
// add up exactly.
func priceWithFee(price, rate decimal.Decimal) amounts {
	price = price.Round(4)
	fee := price.Mul(rate).Round(4)
	return amounts{Price: price, Fee: fee, Total: price.Add(fee)}
}

// usd formats an amount the way it goes on the wire: exactly 4 decimals.
func usd(d decimal.Decimal) string { return toolgatetype.FormatUSD(d) }
