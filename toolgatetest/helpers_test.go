package toolgatetest_test

import "github.com/shopspring/decimal"

func decimalPtr(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}
