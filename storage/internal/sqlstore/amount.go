package sqlstore

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// AmountText is an optional amount as the backends store it: decimal text
// with the scale it was given ("25.0000" stays "25.0000", where String
// would trim the zeros), so that what is read back is exactly what was put.
func AmountText(d *decimal.Decimal) *string {
	if d == nil {
		return nil
	}
	s := d.String()
	if exp := d.Exponent(); exp < 0 {
		s = d.StringFixed(-exp)
	}
	return &s
}

// ParseAmount reads back an optional amount AmountText wrote.
func ParseAmount(s *string) (*decimal.Decimal, error) {
	if s == nil {
		return nil, nil
	}
	d, err := decimal.NewFromString(*s)
	if err != nil {
		return nil, fmt.Errorf("stored amount %q: %w", *s, err)
	}
	return &d, nil
}
