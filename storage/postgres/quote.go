package postgres

import (
	"context"
	"time"

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
	return s.CreateQuoteCapped(ctx, q, 0)
}

// CreateQuoteCapped stores a new quote as CreateQuote does, unless the
// principal holds max open quotes (see storage.Store).
//
// Quotes of one principal are serialized by a transaction-scoped advisory
// lock (class openQuotesLockClass, key the principal's hash), taken in the
// statement before the insert; the insert's snapshot (READ COMMITTED) then
// includes every quote the previous holders committed, so the count is
// exact on any number of instances. The lock is in memory only: no row is
// written for it, and a quote never waits for a call, whose admission
// takes another lock. Principals whose hashes collide only share a queue.
// The count walks the partial index of open quotes (migration 0016) and
// stops at max.
func (s *Store) CreateQuoteCapped(ctx context.Context, q storage.Quote, max int) error {
	// One implicit transaction: the setting and the lock last until the
	// batch commits.
	var refused error
	batch := &pgx.Batch{}
	s.queueCreateQuote(batch, q, max, "", nil, &refused, false)
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return translate(err)
	}
	if refused != nil {
		return refused
	}
	s.memo.quoteCreated(q)
	return nil
}

// queueCreateQuote queues the statements that store q, for a batch that
// commits as one implicit transaction: unless locked, the commit that does
// not wait for its WAL (see CreateQuote), with the principal's quote lock
// when max caps its open quotes; then the insert. When the cap refuses the
// quote, the insert's callback sets *refused to an *storage.OpenQuotesError
// and succeeds: a refusal is the quote's answer, not the batch's failure,
// so that in a batch of several quotes (see quoteBatch) it hides no other
// quote's answer.
//
// With a key, the quote is stored only when the principal's key holds no
// record, which held tells once the batch has read it (see
// storage.Reads.Key).
//
// locked is for a batch that has made its commit asynchronous and taken
// the quote locks of all its principals already (see quoteBatch).
func (s *Store) queueCreateQuote(batch *pgx.Batch, q storage.Quote, max int, key string, held func() bool, refused *error, locked bool) {
	state := q.State
	if state == "" {
		state = storage.QuoteOpen
	}
	args := []any{bytesOf(q.ID), q.Principal, q.ToolID, q.ToolSlug, q.ToolVersion, q.ManifestDigest,
		q.PriceUSD.String(), q.FeeUSD.String(), q.TotalUSD.String(), q.CreatedAt, q.ExpiresAt,
		string(state), q.UsedByKey}
	switch {
	case locked:
	case max > 0:
		batch.Queue(s.sql(lockQuotesSQL), openQuotesLockClass, q.Principal)
	default:
		batch.Queue(asyncCommitSQL)
	}
	switch {
	case key != "":
		batch.Queue(s.sql(insertQuoteUnlessKeySQL), append(args, max, key)...).QueryRow(func(row pgx.Row) error {
			var (
				inserted, keyHeld bool
				first             *time.Time
			)
			if err := row.Scan(&inserted, &first, &keyHeld); err != nil {
				return err
			}
			switch {
			case inserted:
			case keyHeld && held():
			case keyHeld:
				// The key's record was made between the batch's read of
				// it and the insert: a call under it began meanwhile.
				*refused = storage.ErrIdempotencyConflict
			default:
				*refused = openQuotesError(max, first)
			}
			return nil
		})
	case max > 0:
		batch.Queue(s.sql(insertQuoteCappedSQL), append(args, max)...).QueryRow(func(row pgx.Row) error {
			var (
				inserted bool
				first    *time.Time
			)
			if err := row.Scan(&inserted, &first); err != nil {
				return err
			}
			if !inserted {
				*refused = openQuotesError(max, first)
			}
			return nil
		})
	default:
		batch.Queue(s.sql(insertQuoteSQL), args...)
	}
}

// openQuotesError is the refusal of a quote by its principal's cap of max
// open quotes, the first of which expires at first.
func openQuotesError(max int, first *time.Time) error {
	refused := &storage.OpenQuotesError{Max: max}
	if first != nil {
		refused.FirstExpiry = utc(*first)
	}
	return refused
}

// openQuotesLockClass is the first key of the advisory lock that
// serializes the quotes of one principal (see CreateQuoteCapped).
const openQuotesLockClass = 0x6f71756f // "oquo"

// lockQuotesSQL makes the transaction commit without waiting for its WAL
// and takes the principal's ($2) quote lock, in one statement.
const lockQuotesSQL = `SELECT ` + asyncCommit + `, pg_advisory_xact_lock($1, hashtext($2))`

const insertQuoteSQL = `
	INSERT INTO {schema}.quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
		price_usd, fee_usd, total_usd, created_at, expires_at, state, used_by_key)
	VALUES ($1, $2, $3, $4, $5, $6, $7::numeric, $8::numeric, $9::numeric, $10, $11, $12, $13)`

// insertQuoteSelectSQL inserts the quote $1-$13 from a SELECT, whose FROM
// and WHERE follow it: the conditional inserts below.
const insertQuoteSelectSQL = `INSERT INTO {schema}.quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest,
			price_usd, fee_usd, total_usd, created_at, expires_at, state, used_by_key)
		SELECT $1, $2, $3, $4, $5::integer, $6, $7::numeric, $8::numeric, $9::numeric,
			$10::timestamptz, $11::timestamptz, $12, $13`

// insertQuoteCappedSQL inserts the quote $1-$13 only while its principal
// holds fewer than $14 open quotes at its creation time ($10), and says
// whether it did and when the first of the open ones it counted expires.
// The open quotes are read in expiry order from the partial index, at
// most $14 of them, so the first counted is the first to expire.
const insertQuoteCappedSQL = `
	WITH open AS (
		SELECT count(*) AS n, min(expires_at) AS first FROM (
			SELECT expires_at FROM {schema}.quotes
			WHERE principal = $2 AND state = 'open' AND expires_at > $10
			ORDER BY expires_at LIMIT $14
		) o
	),
	created AS (
		` + insertQuoteSelectSQL + `
		FROM open WHERE open.n < $14
		RETURNING 1
	)
	SELECT EXISTS (SELECT FROM created), (SELECT first FROM open)`

// insertQuoteUnlessKeySQL is insertQuoteSQL or, with a cap ($14 > 0),
// insertQuoteCappedSQL, only while principal $2's key $15 holds no record
// (see storage.Reads.Key); it says whether it inserted, when the first
// open quote it counted expires, and whether the key held a record.
const insertQuoteUnlessKeySQL = `
	WITH held AS (
		SELECT EXISTS (SELECT FROM {schema}.executions WHERE principal = $2 AND idempotency_key = $15) AS h
	),
	open AS (
		SELECT count(*) AS n, min(expires_at) AS first FROM (
			SELECT expires_at FROM {schema}.quotes
			WHERE $14 > 0 AND principal = $2 AND state = 'open' AND expires_at > $10
			ORDER BY expires_at LIMIT greatest($14, 0)
		) o
	),
	created AS (
		` + insertQuoteSelectSQL + `
		FROM open, held WHERE NOT held.h AND ($14 <= 0 OR open.n < $14)
		RETURNING 1
	)
	SELECT EXISTS (SELECT FROM created), (SELECT first FROM open), (SELECT h FROM held)`

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
