package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage/internal/sqlstore"
	"github.com/toolgate/toolgate/toolgatetype"
)

// spendControlsDoc is the stored JSON shape of toolgatetype.SpendControls.
// It is not their JSON form on the wire: it keeps amounts as strings with
// their scale ("25.0000" stays "25.0000", "25" stays "25"), so what is read
// back is exactly what was put, leaves out what is not set, and writes
// tools as null when there are none. Its own tags keep what is on disk
// from following a change of the wire form. The encoding must not change
// either way: documents already stored are in it, and an admission with
// remembered reads compares the stored document with this encoding of what
// it read (see admitStatement).
type spendControlsDoc struct {
	MaxPerCallUSD      *string                 `json:"maxPerCallUsd,omitempty"`
	DailyLimitUSD      *string                 `json:"dailyLimitUsd,omitempty"`
	MonthlyLimitUSD    *string                 `json:"monthlyLimitUsd,omitempty"`
	RateLimitPerMinute *int                    `json:"rateLimitPerMinute,omitempty"`
	RateLimitPerHour   *int                    `json:"rateLimitPerHour,omitempty"`
	Tools              map[string]toolControls `json:"tools"`
}

type toolControls struct {
	Allowed            *bool   `json:"allowed,omitempty"`
	MaxPerCallUSD      *string `json:"maxPerCallUsd,omitempty"`
	DailyLimitUSD      *string `json:"dailyLimitUsd,omitempty"`
	MonthlyLimitUSD    *string `json:"monthlyLimitUsd,omitempty"`
	RateLimitPerMinute *int    `json:"rateLimitPerMinute,omitempty"`
	RateLimitPerHour   *int    `json:"rateLimitPerHour,omitempty"`
}

// decodeAmount reads back an amount of the document.
func decodeAmount(s *string) (*decimal.Decimal, error) {
	d, err := sqlstore.ParseAmount(s)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return d, nil
}

func encodeSpendControls(c toolgatetype.SpendControls) spendControlsDoc {
	doc := spendControlsDoc{
		MaxPerCallUSD:      sqlstore.AmountText(c.MaxPerCallUSD),
		DailyLimitUSD:      sqlstore.AmountText(c.DailyLimitUSD),
		MonthlyLimitUSD:    sqlstore.AmountText(c.MonthlyLimitUSD),
		RateLimitPerMinute: c.RateLimitPerMinute,
		RateLimitPerHour:   c.RateLimitPerHour,
	}
	if c.Tools != nil {
		doc.Tools = make(map[string]toolControls, len(c.Tools))
		for slug, t := range c.Tools {
			doc.Tools[slug] = toolControls{
				Allowed:            t.Allowed,
				MaxPerCallUSD:      sqlstore.AmountText(t.MaxPerCallUSD),
				DailyLimitUSD:      sqlstore.AmountText(t.DailyLimitUSD),
				MonthlyLimitUSD:    sqlstore.AmountText(t.MonthlyLimitUSD),
				RateLimitPerMinute: t.RateLimitPerMinute,
				RateLimitPerHour:   t.RateLimitPerHour,
			}
		}
	}
	return doc
}

func (doc spendControlsDoc) decode() (toolgatetype.SpendControls, error) {
	var (
		c   toolgatetype.SpendControls
		err error
	)
	if c.MaxPerCallUSD, err = decodeAmount(doc.MaxPerCallUSD); err != nil {
		return c, err
	}
	if c.DailyLimitUSD, err = decodeAmount(doc.DailyLimitUSD); err != nil {
		return c, err
	}
	if c.MonthlyLimitUSD, err = decodeAmount(doc.MonthlyLimitUSD); err != nil {
		return c, err
	}
	c.RateLimitPerMinute, c.RateLimitPerHour = doc.RateLimitPerMinute, doc.RateLimitPerHour
	if doc.Tools != nil {
		c.Tools = make(map[string]toolgatetype.ToolSpendControls, len(doc.Tools))
		for slug, td := range doc.Tools {
			t := toolgatetype.ToolSpendControls{
				Allowed:            td.Allowed,
				RateLimitPerMinute: td.RateLimitPerMinute,
				RateLimitPerHour:   td.RateLimitPerHour,
			}
			if t.MaxPerCallUSD, err = decodeAmount(td.MaxPerCallUSD); err != nil {
				return c, err
			}
			if t.DailyLimitUSD, err = decodeAmount(td.DailyLimitUSD); err != nil {
				return c, err
			}
			if t.MonthlyLimitUSD, err = decodeAmount(td.MonthlyLimitUSD); err != nil {
				return c, err
			}
			c.Tools[slug] = t
		}
	}
	return c, nil
}

// marshalSpendControls is c as the JSON document spend_controls stores.
func marshalSpendControls(c toolgatetype.SpendControls) ([]byte, error) {
	doc, err := json.Marshal(encodeSpendControls(c))
	if err != nil {
		return nil, fmt.Errorf("postgres: encode spend controls: %w", err)
	}
	return doc, nil
}

// PutSpendControls stores a caller's own spend controls, replacing any earlier.
func (s *Store) PutSpendControls(ctx context.Context, principal string, c toolgatetype.SpendControls) error {
	doc, err := marshalSpendControls(c)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.spend_controls (principal, controls) VALUES ($1, $2)
		ON CONFLICT (principal) DO UPDATE SET controls = EXCLUDED.controls`),
		principal, doc)
	s.memo.forget(principal, "")
	return translate(err)
}

// UpdateSpendControls implements storage.Store. The principal's row is
// locked for the length of one transaction: a row is inserted first when
// there is none, so that two first updates also queue on one row lock
// rather than both reading "none". update runs once.
func (s *Store) UpdateSpendControls(ctx context.Context, principal string, update func(*toolgatetype.SpendControls) error) (toolgatetype.SpendControls, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return toolgatetype.SpendControls{}, translate(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op once committed
	_, err = tx.Exec(ctx, s.sql(`
		INSERT INTO {schema}.spend_controls (principal, controls) VALUES ($1, '{"tools":null}')
		ON CONFLICT (principal) DO NOTHING`), principal)
	if err != nil {
		return toolgatetype.SpendControls{}, translate(err)
	}
	c, err := scanSpendControls(tx.QueryRow(ctx, s.sql(getSpendControlsSQL+` FOR UPDATE`), principal), principal)
	if err != nil {
		return toolgatetype.SpendControls{}, err
	}
	if err := update(&c); err != nil {
		return toolgatetype.SpendControls{}, err
	}
	doc, err := marshalSpendControls(c)
	if err != nil {
		return toolgatetype.SpendControls{}, err
	}
	if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.spend_controls SET controls = $2 WHERE principal = $1`), principal, doc); err != nil {
		return toolgatetype.SpendControls{}, translate(err)
	}
	err = tx.Commit(ctx)
	// Forgotten whatever the outcome: a commit that fails on the way back
	// may have happened.
	s.memo.forget(principal, "")
	if err != nil {
		return toolgatetype.SpendControls{}, translate(err)
	}
	// What is returned is what a read gives back, not update's own values.
	var stored spendControlsDoc
	if err := json.Unmarshal(doc, &stored); err != nil {
		return toolgatetype.SpendControls{}, fmt.Errorf("postgres: decode spend controls of %q: %w", principal, err)
	}
	return stored.decode()
}

// GetSpendControls returns a caller's stored spend controls. ErrNotFound if none.
func (s *Store) GetSpendControls(ctx context.Context, principal string) (toolgatetype.SpendControls, error) {
	return scanSpendControls(s.pool.QueryRow(ctx, s.sql(getSpendControlsSQL), principal), principal)
}

// getSpendControlsSQL reads the controls of principal $1 for scanSpendControls.
const getSpendControlsSQL = `SELECT controls FROM {schema}.spend_controls WHERE principal = $1`

func scanSpendControls(row pgx.Row, principal string) (toolgatetype.SpendControls, error) {
	var raw []byte
	if err := row.Scan(&raw); err != nil {
		return toolgatetype.SpendControls{}, translate(err)
	}
	var doc spendControlsDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return toolgatetype.SpendControls{}, fmt.Errorf("postgres: decode spend controls of %q: %w", principal, err)
	}
	return doc.decode()
}
