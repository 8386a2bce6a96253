package postgres

import (
	"context"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// CreateQuote stores a new quote; an empty State is stored as open.
// ErrAlreadyExists when the id is taken.
func (s *Store) CreateQuote(ctx context.Context, q storage.Quote) error {
	state := q.State
	if state == "" {
		state = storage.QuoteOpen
	}
	_, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
			price_usd, fee_usd, total_usd, created_at, expires_at, state, used_by_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8::numeric, $9::numeric, $10, $11, $12, $13)`),
		q.ID, q.Principal, q.ToolID, q.ToolSlug, q.ToolVersion, q.ManifestDigest,
		q.PriceUSD.String(), q.FeeUSD.String(), q.TotalUSD.String(), q.CreatedAt, q.ExpiresAt,
		string(state), q.UsedByKey)
	return translate(err)
}

// GetQuote returns the quote with this id. ErrNotFound if absent.
func (s *Store) GetQuote(ctx context.Context, id uuid.UUID) (storage.Quote, error) {
	var (
		q                 storage.Quote
		price, fee, total string
		state             string
	)
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT id, principal, tool_id, tool_slug, tool_version, manifest_digest,
			price_usd::text, fee_usd::text, total_usd::text, created_at, expires_at, state, used_by_key
		FROM {schema}.quotes WHERE id = $1`), id).Scan(
		&q.ID, &q.Principal, &q.ToolID, &q.ToolSlug, &q.ToolVersion, &q.ManifestDigest,
		&price, &fee, &total, &q.CreatedAt, &q.ExpiresAt, &state, &q.UsedByKey)
	if err != nil {
		return storage.Quote{}, translate(err)
	}
	q.State = storage.QuoteState(state)
	q.CreatedAt, q.ExpiresAt = utc(q.CreatedAt), utc(q.ExpiresAt)
	if q.PriceUSD, err = parseDecimal(price); err != nil {
		return storage.Quote{}, err
	}
	if q.FeeUSD, err = parseDecimal(fee); err != nil {
		return storage.Quote{}, err
	}
	if q.TotalUSD, err = parseDecimal(total); err != nil {
		return storage.Quote{}, err
	}
	return q, nil
}
