package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// approvalRequestColumns is the select list scanApprovalRequest reads.
const approvalRequestColumns = `id, principal, quote_id, tool_id, tool_slug, manifest_digest,
	price_usd::text, fee_usd::text, total_usd::text, input, input_sha256, status,
	decided_by, decided_at, remember, execution_id, created_at, expires_at, approvers, budgets`

func scanApprovalRequest(row pgx.Row) (storage.ApprovalRequest, error) {
	var (
		r                         storage.ApprovalRequest
		price, fee, total, status string
		remember                  string
		decidedAt                 *time.Time
		executionID               *[16]byte
	)
	err := row.Scan(bytesAt(&r.ID), &r.Principal, bytesAt(&r.QuoteID), &r.ToolID, &r.ToolSlug, &r.ManifestDigest,
		&price, &fee, &total, &r.Input, &r.InputSHA256, &status,
		&r.DecidedBy, &decidedAt, &remember, &executionID, &r.CreatedAt, &r.ExpiresAt, &r.Approvers, &r.Budgets)
	if err != nil {
		return storage.ApprovalRequest{}, translate(err)
	}
	r.Status, r.Remember = storage.ApprovalStatus(status), toolgatetype.StandingMode(remember)
	r.DecidedAt, r.CreatedAt, r.ExpiresAt = nullTime(decidedAt), utc(r.CreatedAt), utc(r.ExpiresAt)
	if executionID != nil {
		r.ExecutionID = *executionID
	}
	if r.PriceUSD, err = parseDecimal(price); err != nil {
		return storage.ApprovalRequest{}, err
	}
	if r.FeeUSD, err = parseDecimal(fee); err != nil {
		return storage.ApprovalRequest{}, err
	}
	if r.TotalUSD, err = parseDecimal(total); err != nil {
		return storage.ApprovalRequest{}, err
	}
	return r, nil
}

// nullID stores uuid.Nil as NULL.
func nullID(id uuid.UUID) any {
	if id == uuid.Nil {
		return nil
	}
	return bytesOf(id)
}

// CreateApprovalRequest stores a new approval request (an empty Status is
// stored as pending) and extends its quote's life to the request's, in one
// statement: the insert happens only when the update of the quote matched,
// and a failed insert undoes the update. The update locks the quote's row,
// so an admission using the quote at once waits for it or is waited for,
// and READ COMMITTED re-checks the update's WHERE on the row as the
// admission left it. When nothing matched, a read taken afterwards says why.
// ErrAlreadyExists when the id is taken; a *storage.PendingRequestError
// when the same request is pending already, which leaves the quote as it
// was.
//
// A pending request is created holding a transaction-scoped advisory lock
// on its principal, quote and input hash: of two instances creating the
// same request at once, the second waits for the first to commit, and its
// look for a pending request, a statement begun after that, finds the
// first's.
//
// r.Event is written by the same statement, only when the request is
// inserted, unless its id exists.
func (s *Store) CreateApprovalRequest(ctx context.Context, r storage.ApprovalRequest) error {
	if r.Event != nil {
		if err := r.Event.Check(); err != nil {
			return err
		}
	}
	status := r.Status
	if status == "" {
		status = storage.ApprovalPending
	}
	input := r.Input
	if input == nil {
		input = []byte{} // the column is NOT NULL; an empty input is still an input
	}
	args := []any{bytesOf(r.ID), r.Principal, bytesOf(r.QuoteID), r.ToolID, r.ToolSlug, r.ManifestDigest,
		r.PriceUSD.String(), r.FeeUSD.String(), r.TotalUSD.String(), input, r.InputSHA256, string(status),
		r.DecidedBy, timeOrNull(r.DecidedAt), string(r.Remember), nullID(r.ExecutionID), r.CreatedAt, r.ExpiresAt,
		r.Approvers, r.Budgets}
	args = append(args, newEventParams(r.Event)...)
	insert := s.sql(`
		WITH extended AS (
			UPDATE {schema}.quotes SET expires_at = GREATEST(expires_at, $18)
			WHERE id = $3 AND principal = $2 AND state = 'open' AND expires_at > $17
			RETURNING id
		), request AS (
			INSERT INTO {schema}.approval_requests (id, principal, quote_id, tool_id, tool_slug, manifest_digest,
				price_usd, fee_usd, total_usd, input, input_sha256, status, decided_by, decided_at, remember,
				execution_id, created_at, expires_at, approvers, budgets)
			SELECT $1, $2, $3, $4, $5, $6, $7::numeric, $8::numeric, $9::numeric, $10, $11, $12, $13, $14, $15,
				$16, $17, $18, NULLIF($19::text[], '{}'), NULLIF($20::text[], '{}')
			FROM extended
			RETURNING 1
		), ` + addEventCTE("request", 21) + `
		SELECT count(*) FROM request`)
	var (
		n   int
		err error
	)
	if status != storage.ApprovalPending {
		err = s.pool.QueryRow(ctx, insert, args...).Scan(&n)
	} else {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, approvalRequestLockClass,
				s.schema+"\x1f"+r.Principal+"\x1f"+r.QuoteID.String()+"\x1f"+r.InputSHA256); err != nil {
				return err
			}
			same, err := scanApprovalRequest(tx.QueryRow(ctx, s.sql(samePendingSQL),
				r.Principal, r.ToolID, r.InputSHA256, bytesOf(r.QuoteID), r.CreatedAt))
			switch {
			case err == nil:
				return &storage.PendingRequestError{Pending: same}
			case !errors.Is(err, storage.ErrNotFound):
				return err
			}
			return tx.QueryRow(ctx, insert, args...).Scan(&n)
		})
	}
	var pending *storage.PendingRequestError
	if errors.As(err, &pending) {
		return err
	}
	if err != nil {
		return translate(err)
	}
	// What this instance remembers of the quote ends sooner now.
	s.memo.forgetQuote(r.QuoteID)
	if n == 1 {
		return nil
	}
	q, err := s.GetQuote(ctx, r.QuoteID)
	switch {
	case errors.Is(err, storage.ErrNotFound) || err == nil && q.Principal != r.Principal:
		return storage.ErrQuoteNotFound
	case err != nil:
		return err
	case q.State == storage.QuoteUsed:
		return storage.ErrQuoteUsed
	}
	return storage.ErrQuoteExpired
}

// approvalRequestLockClass is the first key of the advisory lock that
// serializes the creation of one request (see CreateApprovalRequest).
const approvalRequestLockClass = 0x61707271 // "aprq"

// samePendingSQL finds the live pending request of a principal's call
// (tool, input hash and quote), from the index on the first three.
const samePendingSQL = `SELECT ` + approvalRequestColumns + ` FROM {schema}.approval_requests
	WHERE principal = $1 AND tool_id = $2 AND input_sha256 = $3 AND quote_id = $4
		AND status = 'pending' AND expires_at > $5
	ORDER BY created_at DESC, id DESC LIMIT 1`

// getApprovalRequestSQL reads the request with id $1 for scanApprovalRequest.
const getApprovalRequestSQL = `SELECT ` + approvalRequestColumns + ` FROM {schema}.approval_requests WHERE id = $1`

// GetApprovalRequest returns the approval request with this id. ErrNotFound
// if absent.
func (s *Store) GetApprovalRequest(ctx context.Context, id uuid.UUID) (storage.ApprovalRequest, error) {
	return scanApprovalRequest(s.pool.QueryRow(ctx, s.sql(getApprovalRequestSQL), bytesOf(id)))
}

// ListApprovalRequests returns the requests f selects, newest first. The
// cursor compares (created_at, id) as a row, which the principal index
// answers in order; uuid columns compare by their bytes, as
// storage.ApprovalCursor does. A tool and an input hash are compared as
// plain equalities, added only when set, so that a plan cached for the
// statement can answer them from the index on them.
//
// A listing is up to three merged, each from its own index and each
// stopping at the limit: the principals' requests, from the principal
// index; the requests of the budgets (f.Budgets) of other principals, from
// the index on budgets (migration 0022); and, in an approver's view
// (f.Approver), the requests named for the approver, from the index on
// approvers (migration 0021), the other two then keeping to requests that
// name none.
func (s *Store) ListApprovalRequests(ctx context.Context, f storage.ApprovalRequestFilter) ([]storage.ApprovalRequest, error) {
	if !f.Selects() {
		return nil, nil
	}
	statuses := make([]string, len(f.Statuses))
	for i, st := range f.Statuses {
		statuses[i] = string(st)
	}
	var afterAt *time.Time
	var afterID any
	if f.After != nil {
		at := f.After.CreatedAt
		afterAt, afterID = &at, bytesOf(f.After.ID)
	}
	principals := f.Principals
	if principals == nil {
		principals = []string{} // a view of no principals: the budgets' and named requests alone
	}
	args := []any{principals, statuses, timeOrNull(f.LiveAt), timeOrNull(f.ExpiredAt), afterAt, afterID, f.Limit}
	var filters strings.Builder
	filters.WriteString(`
			AND (cardinality($2::text[]) = 0 OR status = ANY($2::text[]))
			AND ($3::timestamptz IS NULL OR expires_at > $3)
			AND ($4::timestamptz IS NULL OR expires_at <= $4)
			AND ($5::timestamptz IS NULL OR (created_at, id) < ($5, $6::uuid))`)
	if f.ToolID != "" {
		args = append(args, f.ToolID)
		fmt.Fprintf(&filters, " AND tool_id = $%d", len(args))
	}
	if f.InputSHA256 != "" {
		args = append(args, f.InputSHA256)
		fmt.Fprintf(&filters, " AND input_sha256 = $%d", len(args))
	}
	unnamed := ""
	if f.Approver != "" {
		unnamed = " AND approvers IS NULL"
	}
	// The principals' branch is there even for none, to give $1 its type.
	branches := []string{`principal = ANY($1::text[])` + unnamed}
	if len(f.Budgets) > 0 {
		args = append(args, f.Budgets)
		// The principals' own requests are the first branch's to give.
		branches = append(branches, `budgets && $`+strconv.Itoa(len(args))+`::text[] AND budgets IS NOT NULL`+unnamed+
			` AND NOT (principal = ANY($1::text[]))`)
	}
	if f.Approver != "" {
		args = append(args, f.Approver)
		branches = append(branches, `approvers @> ARRAY[$`+strconv.Itoa(len(args))+`::text]`)
	}
	one := func(where string) string {
		return `
		SELECT ` + approvalRequestColumns + ` FROM {schema}.approval_requests
		WHERE ` + where + filters.String() + `
		ORDER BY created_at DESC, id DESC
		LIMIT $7`
	}
	query := one(branches[0])
	if len(branches) > 1 {
		parts := make([]string, len(branches))
		for i, b := range branches {
			parts[i] = "(" + one(b) + ")"
		}
		query = strings.Join(parts, "\n\t\tUNION ALL\n") + `
		ORDER BY created_at DESC, id DESC
		LIMIT $7`
	}
	rows, err := s.pool.Query(ctx, s.sql(query), args...)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []storage.ApprovalRequest
	for rows.Next() {
		r, err := scanApprovalRequest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// DecideApprovalRequest decides a pending, unexpired request in one
// statement. Racing decisions queue on the request's row: the first
// commits, and each later one re-reads the row, finds it no longer pending
// and changes nothing (READ COMMITTED re-checks an UPDATE's WHERE on the
// newest version of a row it waited for). A remembered standing approval is
// written by the same statement, only when the update matched, and so is
// d.Event, unless its id exists.
//
// When nothing matched, a second statement, with a snapshot taken after any
// decision that beat this one, says why.
func (s *Store) DecideApprovalRequest(ctx context.Context, d storage.ApprovalDecision) (storage.ApprovalRequest, error) {
	if d.Event != nil {
		if err := d.Event.Check(); err != nil {
			return storage.ApprovalRequest{}, err
		}
	}
	status, remember := storage.ApprovalDenied, toolgatetype.StandingMode("")
	if d.Approve {
		status, remember = storage.ApprovalApproved, d.Remember
	}
	r, err := scanApprovalRequest(s.pool.QueryRow(ctx, s.sql(`
		WITH decided AS (
			UPDATE {schema}.approval_requests
			SET status = $2, decided_by = $3, decided_at = $4, remember = $5
			WHERE id = $1 AND status = 'pending' AND expires_at > $4
			RETURNING *
		), remembered AS (
			INSERT INTO {schema}.approvals (principal, tool_id, manifest_digest, mode, approved_by, updated_at)
			SELECT principal, tool_id, manifest_digest, $5, $3, $4 FROM decided WHERE $6::boolean`+upsertApprovalSQL+`
		), `+addEventCTE("decided", 7)+`
		SELECT `+approvalRequestColumns+` FROM decided`),
		append([]any{bytesOf(d.ID), string(status), d.DecidedBy, d.Now, string(remember), d.Standing()},
			newEventParams(d.Event)...)...))
	if err == nil && d.Standing() {
		s.memo.forget(r.Principal, r.ToolID)
	}
	if !errors.Is(err, storage.ErrNotFound) {
		return r, err
	}
	cur, err := s.GetApprovalRequest(ctx, d.ID)
	switch {
	case err != nil:
		return storage.ApprovalRequest{}, err
	case cur.Status != storage.ApprovalPending:
		return storage.ApprovalRequest{}, storage.ErrAlreadyDecided
	case !cur.ExpiresAt.After(d.Now):
		return storage.ApprovalRequest{}, storage.ErrApprovalExpired
	}
	return storage.ApprovalRequest{}, fmt.Errorf("postgres: the decision of approval request %s matched nothing", d.ID)
}
