package testproc

import (
	"context"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/toolgatetype"
)

// RaisedLimits is an operator's spend-controls source that raises every
// limit out of a benchmark's reach, so it measures admitted calls rather
// than refusals. The limits are still measured and enforced on every call.
type RaisedLimits struct{}

// SpendControls returns the raised limits for any principal.
func (RaisedLimits) SpendControls(context.Context, string) (toolgatetype.SpendControls, error) {
	usd := decimal.NewFromInt(1_000_000_000)
	calls := 1 << 30
	return toolgatetype.SpendControls{
		DailyLimitUSD: &usd, MonthlyLimitUSD: &usd,
		RateLimitPerMinute: &calls, RateLimitPerHour: &calls,
	}, nil
}
