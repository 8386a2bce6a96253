package postgres

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Amounts cross the driver as text: NUMERIC(20,4) in the database, written
// from decimal.Decimal.String and read back with ::text, so no value ever
// passes through a float.

func parseDecimal(s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("postgres: bad numeric %q: %w", s, err)
	}
	return d, nil
}

// bytesOf passes a UUID to pgx as its 16 bytes. pgx takes a uuid.UUID for
// the driver.Valuer it is: it formats it as text, fails to encode that text
// as a binary uuid (formatting an error message on the way), and parses it
// back, on every argument. Bytes take its direct path.
func bytesOf(id uuid.UUID) [16]byte { return id }

// bytesAt is bytesOf for a scan target.
func bytesAt(id *uuid.UUID) *[16]byte { return (*[16]byte)(id) }

// utc returns t in UTC, keeping the zero time zero. pgx returns timestamptz
// in the local zone; UTC makes stored and returned times print alike.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// nullTime maps a nullable timestamptz to the zero time when NULL.
func nullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return utc(*t)
}

// timeOrNull stores the zero time, a record's "not set", as NULL.
func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
