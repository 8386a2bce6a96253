package sqlite

import (
	"context"
	"database/sql"

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
// insert run in the writer's transaction, which holds the file's write
// lock, so no other write of any process comes in between. The count
// walks the partial index of open quotes (migration 0011), and stops at
// max. It is a statement of its own rather than a condition of the insert:
// SQLite runs an INSERT that selects from its own table through a
// temporary copy of the selected rows, which measured dearer than the
// second statement.
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
	return s.write(ctx, func(tx *writeTx) error {
		if max > 0 {
			var (
				n     int
				first sql.NullInt64
			)
			if err := translate(tx.queryRow(openQuotesSQL, q.Principal, nanos(q.CreatedAt), max).Scan(&n, &first)); err != nil {
				return err
			}
			if n >= max {
				return &storage.OpenQuotesError{Max: max, FirstExpiry: fromNanos(first.Int64)}
			}
		}
		_, err := tx.exec(`
			INSERT INTO quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
				price, fee, total, created_at, expires_at, state, used_by_key)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			idBytes(q.ID), q.Principal, q.ToolID, q.ToolSlug, q.ToolVersion, q.ManifestDigest,
			amounts[0], amounts[1], amounts[2], nanos(q.CreatedAt), nanos(q.ExpiresAt), string(state), q.UsedByKey)
		return err
	})
}

// openQuotesSQL counts the open quotes of principal ?1 at ?2, at most ?3
// of them, and says when the first of those expires; they are read in
// expiry order from the partial index, so the first counted is the first
// to expire.
const openQuotesSQL = `
	SELECT count(*), min(expires_at) FROM (
		SELECT expires_at FROM quotes WHERE principal = ?1 AND state = 'open' AND expires_at > ?2
		ORDER BY expires_at LIMIT ?3
	)`

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
