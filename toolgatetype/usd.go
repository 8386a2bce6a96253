package toolgatetype

import "github.com/shopspring/decimal"

// FormatUSD writes an amount the way the API does: exactly 4 decimals,
// rounded half away from zero ("10.0000").
func FormatUSD(d decimal.Decimal) string {
	// StringFixed rounds through big.Int arithmetic. An amount with at most
	// 4 decimals and 18 digits once scaled needs no rounding, and a quote
	// formats a dozen of them, so those are written from an int64.
	if exp := d.Exponent(); exp >= -4 && exp <= 4 && d.NumDigits()+int(exp)+4 <= 18 {
		return fixed4(d.CoefficientInt64() * pow10[exp+4])
	}
	return d.StringFixed(4)
}

var pow10 = [...]int64{1, 10, 100, 1000, 1e4, 1e5, 1e6, 1e7, 1e8}

// fixed4 writes n ten-thousandths as a decimal with 4 places.
func fixed4(n int64) string {
	var buf [24]byte
	i := len(buf)
	neg := n < 0
	if neg {
		n = -n
	}
	for k := 0; k < 4; k++ {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
	}
	i--
	buf[i] = '.'
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		i--
		buf[i] = '-'
	}
	return string(buf[i:])
}
