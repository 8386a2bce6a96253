package sqlite

import (
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Instants are stored as INTEGER nanoseconds since the Unix epoch, which
// keeps every time the gateway makes exactly (memory does, and so, to the
// nanosecond, does this store) and compares as integers in SQL. An int64
// of nanoseconds spans the years 1678 to 2262. The zero time, the
// "not set" of a record and a limit's "since the beginning", is stored as
// math.MinInt64 and read back as the zero time; an instant outside the span
// is stored as its nearer end, so it keeps its order against every other.
var (
	earliestNano = time.Unix(0, math.MinInt64+1)
	latestNano   = time.Unix(0, math.MaxInt64)
)

// Nanoseconds per minute and per day: the widths of the ledger's rollups.
const (
	nanosPerMinute = int64(time.Minute)
	nanosPerDay    = int64(24 * time.Hour)
)

// nanos encodes t for storage.
func nanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return math.MinInt64
	case t.Before(earliestNano):
		return math.MinInt64 + 1
	case t.After(latestNano):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// fromNanos decodes a stored instant, in UTC.
func fromNanos(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nullNanos decodes a nullable instant: NULL is the zero time.
func nullNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return fromNanos(*n)
}

// floorDiv is a / b rounded towards minus infinity (b > 0), so that an
// instant before the epoch falls in the minute or day that holds it.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// ceilDiv is a / b rounded towards plus infinity (b > 0).
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b > 0 {
		q++
	}
	return q
}

// unitsPerUSD is the scale of stored amounts: ten-thousandths of a dollar,
// the four decimals every amount has.
const unitsPerUSD = 10_000

// units encodes an amount as ten-thousandths of a dollar. An amount with
// more than four decimals, or too large for an int64 of them, is refused:
// rounding it would store a different amount than the caller asked for.
func units(d decimal.Decimal) (int64, error) {
	u := d.Shift(4)
	if !u.IsInteger() {
		return 0, fmt.Errorf("sqlite: amount %s has more than 4 decimals", d)
	}
	if u.GreaterThan(decimal.NewFromInt(math.MaxInt64)) || u.LessThan(decimal.NewFromInt(math.MinInt64)) {
		return 0, fmt.Errorf("sqlite: amount %s is out of range", d)
	}
	return u.IntPart(), nil
}

// fromUnits decodes a stored amount, with its four decimals ("0.1100").
func fromUnits(u int64) decimal.Decimal { return decimal.New(u, -4) }

// idBytes passes a UUID as its 16 bytes.
func idBytes(id uuid.UUID) []byte { return id[:] }

// parseID decodes a stored UUID.
func parseID(b []byte) (uuid.UUID, error) {
	id, err := uuid.FromBytes(b)
	if err != nil {
		return uuid.UUID{}, fmt.Errorf("sqlite: stored id is %d bytes, not a UUID's 16", len(b))
	}
	return id, nil
}

// boolInt stores a bool as SQLite does, 0 or 1.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
