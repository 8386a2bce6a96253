package sqlite

import (
	"context"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// CreateQuote stores a new quote; an empty State is stored as open.
// ErrAlreadyExists when the id is taken.
func (s *Store) CreateQuote(ctx context.Context, q storage.Quote) error {
	state := q.State
	if state == "" {
		state = storage.QuoteOpen
	}
	var amounts [3]int64
	for i, d := range [...]decimal.Decimal{q.PriceUSD, q.FeeUSD, q.TotalUSD} {
		u, err := units(d)
		if err != nil {
			return err
		}
		amounts[i] = u
	}
	return s.write(ctx, func(tx *writeTx) error {
		_, err := tx.exec(`
			INSERT INTO quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
				price, fee, total, created_at, expires_at, state, used_by_key)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			idBytes(q.ID), q.Principal, q.ToolID, q.ToolSlug, q.ToolVersion, q.ManifestDigest,
			amounts[0], amounts[1], amounts[2], nanos(q.CreatedAt), nanos(q.ExpiresAt), string(state), q.UsedByKey)
		return err
	})
}

// GetQuote returns the quote with this id. ErrNotFound if absent.
func (s *Store) GetQuote(ctx context.Context, id uuid.UUID) (storage.Quote, error) {
	return getQuote(s.pool(ctx), id)
}

// getQuote reads the quote with this id.
func getQuote(r reader, id uuid.UUID) (storage.Quote, error) {
	var (
		q                 storage.Quote
		rawID             []byte
		price, fee, total int64
		created, expires  int64
		state             string
	)
	err := translate(r.queryRow(`
		SELECT id, principal, tool_id, tool_slug, tool_version, manifest_digest,
			price, fee, total, created_at, expires_at, state, used_by_key
		FROM quotes WHERE id = ?`, idBytes(id)).Scan(
		&rawID, &q.Principal, &q.ToolID, &q.ToolSlug, &q.ToolVersion, &q.ManifestDigest,
		&price, &fee, &total, &created, &expires, &state, &q.UsedByKey))
	if err != nil {
		return storage.Quote{}, err
	}
	if q.ID, err = parseID(rawID); err != nil {
		return storage.Quote{}, err
	}
	q.PriceUSD, q.FeeUSD, q.TotalUSD = fromUnits(price), fromUnits(fee), fromUnits(total)
	q.CreatedAt, q.ExpiresAt = fromNanos(created), fromNanos(expires)
	q.State = storage.QuoteState(state)
	return q, nil
}
