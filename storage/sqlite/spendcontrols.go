package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/internal/sqlstore"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A caller's spend controls are a spend_controls row and a
// spend_controls_tools row per tool, NULL for a field not set. Amounts are
// decimal text with the scale they were given, so what is read back is
// exactly what was put.

// parseAmount reads an optional amount back.
func parseAmount(s *string) (*decimal.Decimal, error) {
	d, err := sqlstore.ParseAmount(s)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return d, nil
}

// optInt stores an optional count.
func optInt(n *int) *int64 {
	if n == nil {
		return nil
	}
	v := int64(*n)
	return &v
}

// readInt reads an optional count back.
func readInt(n sql.NullInt64) *int {
	if !n.Valid {
		return nil
	}
	v := int(n.Int64)
	return &v
}

// PutSpendControls stores a caller's own spend controls, replacing any
// earlier ones whole, tools included, in one write.
func (s *Store) PutSpendControls(ctx context.Context, principal string, c toolgatetype.SpendControls) error {
	return s.write(ctx, func(tx *writeTx) error { return putSpendControls(tx, principal, c) })
}

// putSpendControls replaces the principal's controls inside a write, so
// that a read-modify-write of them is one write too.
func putSpendControls(tx *writeTx, principal string, c toolgatetype.SpendControls) error {
	// Deleting the row deletes its tools' rows (ON DELETE CASCADE).
	if _, err := tx.exec(`DELETE FROM spend_controls WHERE principal = ?`, principal); err != nil {
		return err
	}
	if _, err := tx.exec(`
		INSERT INTO spend_controls (principal, max_per_call_usd, daily_limit_usd, monthly_limit_usd,
			rate_limit_per_minute, rate_limit_per_hour)
		VALUES (?, ?, ?, ?, ?, ?)`,
		principal, sqlstore.AmountText(c.MaxPerCallUSD), sqlstore.AmountText(c.DailyLimitUSD), sqlstore.AmountText(c.MonthlyLimitUSD),
		optInt(c.RateLimitPerMinute), optInt(c.RateLimitPerHour)); err != nil {
		return err
	}
	for slug, t := range c.Tools {
		var allowed *int64
		if t.Allowed != nil {
			v := boolInt(*t.Allowed)
			allowed = &v
		}
		if _, err := tx.exec(`
			INSERT INTO spend_controls_tools (principal, tool_slug, allowed, max_per_call_usd, daily_limit_usd,
				monthly_limit_usd, rate_limit_per_minute, rate_limit_per_hour)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			principal, slug, allowed, sqlstore.AmountText(t.MaxPerCallUSD), sqlstore.AmountText(t.DailyLimitUSD),
			sqlstore.AmountText(t.MonthlyLimitUSD), optInt(t.RateLimitPerMinute), optInt(t.RateLimitPerHour)); err != nil {
			return err
		}
	}
	return nil
}

// UpdateSpendControls implements storage.Store: the read, update and
// write are one write of the store, so no other change to the principal's
// controls can come between them. update runs once.
func (s *Store) UpdateSpendControls(ctx context.Context, principal string, update func(*toolgatetype.SpendControls) error) (toolgatetype.SpendControls, error) {
	var stored toolgatetype.SpendControls
	err := s.write(ctx, func(tx *writeTx) error {
		c, err := getSpendControls(tx, principal)
		if err != nil && !isNotFound(err) {
			return err
		}
		if err := update(&c); err != nil {
			return err
		}
		if err := putSpendControls(tx, principal, c); err != nil {
			return err
		}
		stored, err = getSpendControls(tx, principal)
		return err
	})
	if err != nil {
		return toolgatetype.SpendControls{}, err
	}
	return stored, nil
}

// GetSpendControls returns a caller's stored spend controls. ErrNotFound if
// none. One statement reads the principal's row with its tools' rows, so
// it sees one Put whole, never parts of two.
func (s *Store) GetSpendControls(ctx context.Context, principal string) (toolgatetype.SpendControls, error) {
	return getSpendControls(s.pool(ctx), principal)
}

// getSpendControls reads a caller's stored spend controls, on the read
// pool or inside a write.
func getSpendControls(r reader, principal string) (toolgatetype.SpendControls, error) {
	rows, err := r.query(`
		SELECT c.max_per_call_usd, c.daily_limit_usd, c.monthly_limit_usd, c.rate_limit_per_minute, c.rate_limit_per_hour,
			t.tool_slug, t.allowed, t.max_per_call_usd, t.daily_limit_usd, t.monthly_limit_usd,
			t.rate_limit_per_minute, t.rate_limit_per_hour
		FROM spend_controls c
		LEFT JOIN spend_controls_tools t ON t.principal = c.principal
		WHERE c.principal = ?`, principal)
	if err != nil {
		return toolgatetype.SpendControls{}, err
	}
	defer rows.Close()
	var (
		c     toolgatetype.SpendControls
		found bool
	)
	for rows.Next() {
		var (
			own, tool limitColumns
			slug      sql.NullString
			allowed   sql.NullBool
		)
		if err := rows.Scan(&own.maxPerCall, &own.daily, &own.monthly, &own.perMinute, &own.perHour,
			&slug, &allowed, &tool.maxPerCall, &tool.daily, &tool.monthly, &tool.perMinute, &tool.perHour); err != nil {
			return toolgatetype.SpendControls{}, translate(err)
		}
		if !found {
			found = true
			if err := own.into(&c.MaxPerCallUSD, &c.DailyLimitUSD, &c.MonthlyLimitUSD); err != nil {
				return toolgatetype.SpendControls{}, err
			}
			c.RateLimitPerMinute, c.RateLimitPerHour = readInt(own.perMinute), readInt(own.perHour)
		}
		if !slug.Valid {
			continue // no tools: the one row of the LEFT JOIN
		}
		var t toolgatetype.ToolSpendControls
		if allowed.Valid {
			t.Allowed = &allowed.Bool
		}
		if err := tool.into(&t.MaxPerCallUSD, &t.DailyLimitUSD, &t.MonthlyLimitUSD); err != nil {
			return toolgatetype.SpendControls{}, err
		}
		t.RateLimitPerMinute, t.RateLimitPerHour = readInt(tool.perMinute), readInt(tool.perHour)
		if c.Tools == nil {
			c.Tools = make(map[string]toolgatetype.ToolSpendControls)
		}
		c.Tools[slug.String] = t
	}
	if err := rows.Err(); err != nil {
		return toolgatetype.SpendControls{}, translate(err)
	}
	if !found {
		return toolgatetype.SpendControls{}, storage.ErrNotFound
	}
	return c, nil
}

// limitColumns are the five limit columns a controls row and a tool row share.
type limitColumns struct {
	maxPerCall, daily, monthly *string
	perMinute, perHour         sql.NullInt64
}

// into decodes the three amounts.
func (l limitColumns) into(maxPerCall, daily, monthly **decimal.Decimal) error {
	var err error
	if *maxPerCall, err = parseAmount(l.maxPerCall); err != nil {
		return err
	}
	if *daily, err = parseAmount(l.daily); err != nil {
		return err
	}
	*monthly, err = parseAmount(l.monthly)
	return err
}
