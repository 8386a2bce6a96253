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
	return s.CreateQuoteCapped(ctx, q, 0)
}

// CreateQuoteCapped stores a new quote as CreateQuote does, unless the
// principal holds max open quotes (see storage.Store). The count and the
// insert are one statement in the writer's transaction, which holds the
// file's write lock, so no other write of any process comes in between.
// The count walks the partial index of open quotes (migration 0011), and
// stops at max.
func (s *Store) CreateQuoteCapped(ctx context.Context, q storage.Quote, max int) error {
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
	args := []any{idBytes(q.ID), q.Principal, q.ToolID, q.ToolSlug, q.ToolVersion, q.ManifestDigest,
		amounts[0], amounts[1], amounts[2], nanos(q.CreatedAt), nanos(q.ExpiresAt), string(state), q.UsedByKey}
	return s.write(ctx, func(tx *writeTx) error {
		if max <= 0 {
			_, err := tx.exec(insertQuoteSQL, args...)
			return err
		}
		n, err := tx.exec(insertQuoteCappedSQL, append(args, max)...)
		if err != nil || n == 1 {
			return err
		}
		var first int64
		if err := translate(tx.queryRow(firstOpenQuoteSQL, q.Principal, nanos(q.CreatedAt)).Scan(&first)); err != nil {
			return err
		}
		return &storage.OpenQuotesError{Max: max, FirstExpiry: fromNanos(first)}
	})
}

const insertQuoteSQL = `
	INSERT INTO quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
		price, fee, total, created_at, expires_at, state, used_by_key)
	VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`

// insertQuoteCappedSQL inserts the quote ?1-?13 only while its principal
// holds fewer than ?14 open quotes at its creation time.
const insertQuoteCappedSQL = `
	INSERT INTO quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
		price, fee, total, created_at, expires_at, state, used_by_key)
	SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13
	WHERE (SELECT count(*) FROM (
		SELECT 1 FROM quotes WHERE principal = ?2 AND state = 'open' AND expires_at > ?10 LIMIT ?14
	)) < ?14`

// firstOpenQuoteSQL is when the first of a principal's open quotes expires.
const firstOpenQuoteSQL = `
	SELECT min(expires_at) FROM quotes WHERE principal = ? AND state = 'open' AND expires_at > ?`

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
