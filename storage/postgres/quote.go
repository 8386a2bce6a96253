package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// CreateQuote stores a new quote; an empty State is stored as open.
// ErrAlreadyExists when the id is taken.
//
// The quote commits without waiting for its WAL to reach disk
// (synchronous_commit off for this transaction only), which spares every
// quote a disk flush. What that risks is losing a quote issued in the last
// moments before a server crash, and a lost quote costs the caller one
// quote-not-found and a new quote: nothing was admitted or charged on it.
// A quote that a recorded result depends on is safe: FinishExecution
// commits synchronously, which flushes the WAL up to and past the quote's
// own commit and its admission's.
func (s *Store) CreateQuote(ctx context.Context, q storage.Quote) error {
	// One implicit transaction: the setting lasts until the batch commits.
	batch := &pgx.Batch{}
	s.queueCreateQuote(batch, q)
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return translate(err)
	}
	s.memo.quoteCreated(q)
	return nil
}

// queueCreateQuote queues the two statements that store q, for a batch that
// commits as one implicit transaction: the commit that does not wait for
// its WAL (see CreateQuote), then the insert.
func (s *Store) queueCreateQuote(batch *pgx.Batch, q storage.Quote) {
	state := q.State
	if state == "" {
		state = storage.QuoteOpen
	}
	batch.Queue(asyncCommitSQL)
	batch.Queue(s.sql(`
		INSERT INTO {schema}.quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
			price_usd, fee_usd, total_usd, created_at, expires_at, state, used_by_key)
		VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8::numeric, $9::numeric, $10, $11, $12, $13)`),
		bytesOf(q.ID), q.Principal, q.ToolID, q.ToolSlug, q.ToolVersion, q.ManifestDigest,
		q.PriceUSD.String(), q.FeeUSD.String(), q.TotalUSD.String(), q.CreatedAt, q.ExpiresAt,
		string(state), q.UsedByKey)
}

// asyncCommitSQL makes the transaction it runs in commit without waiting
// for its WAL to reach disk; the rest of the session is not affected.
// asyncCommit is the same setting, to select beside others.
const (
	asyncCommit    = `set_config('synchronous_commit', 'off', true)`
	asyncCommitSQL = `SELECT ` + asyncCommit
)

// GetQuote returns the quote with this id. ErrNotFound if absent.
func (s *Store) GetQuote(ctx context.Context, id uuid.UUID) (storage.Quote, error) {
	return scanQuote(s.pool.QueryRow(ctx, s.sql(getQuoteSQL), bytesOf(id)))
}

// getQuoteSQL reads the quote with id $1 for scanQuote.
const getQuoteSQL = `
	SELECT id, principal, tool_id, tool_slug, tool_version, manifest_digest,
		price_usd::text, fee_usd::text, total_usd::text, created_at, expires_at, state, used_by_key
	FROM {schema}.quotes WHERE id = $1`

func scanQuote(row pgx.Row) (storage.Quote, error) {
	var (
		q                 storage.Quote
		price, fee, total string
		state             string
	)
	err := row.Scan(
		bytesAt(&q.ID), &q.Principal, &q.ToolID, &q.ToolSlug, &q.ToolVersion, &q.ManifestDigest,
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
