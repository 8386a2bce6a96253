package toolgatetype

import (
	"errors"
	"math/big"

	"github.com/shopspring/decimal"
)

// MaxAmountWholeDigits and MaxAmountDecimals bound every amount of money
// the gateway reads, from a request, a manifest or a config file: at most
// 20 digits before the point and 4 after it. Without a bound, an amount of
// a million digits costs seconds of CPU each time it is parsed, compared
// and formatted; 20 digits is more money than there is.
const (
	MaxAmountWholeDigits = 20
	MaxAmountDecimals    = 4
)

// maxAmountText is the longest text ParseAmount hands to the decimal
// parser. An amount within bounds needs 26 characters (a sign, 20 digits,
// the point and 4 decimals); the rest is room for zeros that add nothing
// ("007.50000") and an exponent. Anything longer is refused unread, so no
// arithmetic is ever done on it.
const maxAmountText = 64

var (
	// ErrNotAmount is ParseAmount's error for text that is not a decimal
	// number.
	ErrNotAmount = errors.New("is not a decimal amount")
	// ErrAmountOutOfBounds matches (errors.Is) every error of ParseAmount
	// and CheckAmount for an amount out of bounds: ErrAmountTooLarge,
	// ErrAmountTooPrecise, and itself for text too long to read whatever
	// its value.
	ErrAmountOutOfBounds = errors.New("must have at most 20 digits before the point and 4 after it")
	// ErrAmountTooLarge is an amount with more than MaxAmountWholeDigits
	// digits before the point.
	ErrAmountTooLarge error = amountBoundError("must have at most 20 digits before the point")
	// ErrAmountTooPrecise is an amount with more than MaxAmountDecimals
	// digits after the point that are not zeros.
	ErrAmountTooPrecise error = amountBoundError("must have at most 4 digits after the point")
)

// amountBoundError is one of the bounds, so that a caller can say which
// one was broken or, with ErrAmountOutOfBounds, that one was.
type amountBoundError string

func (e amountBoundError) Error() string        { return string(e) }
func (e amountBoundError) Is(target error) bool { return target == ErrAmountOutOfBounds }

// ParseAmount reads an amount of money from its decimal text ("10.0000"),
// refusing one out of bounds (ErrAmountTooLarge, ErrAmountTooPrecise)
// before any decimal arithmetic is done on it, and text that is not a
// decimal number (ErrNotAmount). It leaves the sign to its caller: where a negative amount
// means nothing, the caller refuses it with its own words. The errors name
// no field; the caller adds the one it read ("dailyLimitUsd must have...").
//
// Zeros that change nothing do not count against the bound: "1.00000" is
// 1 and has no fifth decimal, as the config file and the spend-controls API
// have always read it. A caller that wants the text itself to have at most
// 4 decimals checks that as well.
func ParseAmount(s string) (decimal.Decimal, error) {
	if len(s) > maxAmountText {
		return decimal.Decimal{}, longAmount(s)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, ErrNotAmount
	}
	if err := CheckAmount(d); err != nil {
		return decimal.Decimal{}, err
	}
	return d, nil
}

// longAmount is ParseAmount's error for text too long to parse: whether it
// is a decimal number at all (a sign, digits, a point, digits), and if so
// which bound it breaks, found in one pass over it.
func longAmount(s string) error {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	whole, decimals := 0, 0 // significant digits: leading and trailing zeros skipped
	digits, point, zeros := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9' && !point:
			if whole > 0 || c != '0' {
				whole++
			}
		case c >= '0' && c <= '9':
			if c == '0' {
				zeros++
			} else {
				decimals += zeros + 1
				zeros = 0
			}
		case c == '.' && !point:
			point = true
			continue
		default:
			return ErrNotAmount
		}
		digits++
	}
	switch {
	case digits == 0:
		return ErrNotAmount
	case whole > MaxAmountWholeDigits:
		return ErrAmountTooLarge
	case decimals > MaxAmountDecimals:
		return ErrAmountTooPrecise
	}
	return ErrAmountOutOfBounds // within bounds, padded with zeros past reason
}

// CheckAmount reports whether d is within bounds: at most
// MaxAmountWholeDigits digits before the point and MaxAmountDecimals after
// it, not counting zeros that add nothing. It is for amounts that come as
// decimals rather than text (a Go program's tools and spend controls); it
// does only integer arithmetic on d's exponent and a bounded division, so
// an amount such as 1e-2000000000 costs no more than any other.
func CheckAmount(d decimal.Decimal) error {
	if d.Sign() == 0 {
		return nil
	}
	exp := int64(d.Exponent())
	digits := int64(d.NumDigits())
	if digits+exp > MaxAmountWholeDigits {
		return ErrAmountTooLarge
	}
	if exp >= -MaxAmountDecimals {
		return nil
	}
	// The coefficient's last k digits are past the fourth decimal: each
	// must be a zero.
	k := -MaxAmountDecimals - exp
	if k >= digits {
		return ErrAmountTooPrecise
	}
	var rem big.Int
	rem.Rem(d.Coefficient(), new(big.Int).Exp(big.NewInt(10), big.NewInt(k), nil))
	if rem.Sign() != 0 {
		return ErrAmountTooPrecise
	}
	return nil
}
