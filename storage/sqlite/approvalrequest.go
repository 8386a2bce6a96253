package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// approvalRequestColumns is the select list scanApprovalRequest reads.
const approvalRequestColumns = `id, principal, quote_id, tool_id, tool_slug, manifest_digest,
	price, fee, total, input, input_sha256, status, decided_by, decided_at, remember, execution_id,
	created_at, expires_at, approvers, budgets`

func scanApprovalRequest(row scanner) (storage.ApprovalRequest, error) {
	var (
		r                        storage.ApprovalRequest
		rawID, rawQuote, rawExec []byte
		price, fee, total        int64
		status, remember         string
		decidedAt                *int64
		created, expires         int64
		approvers, budgets       *string
	)
	err := translate(row.Scan(&rawID, &r.Principal, &rawQuote, &r.ToolID, &r.ToolSlug, &r.ManifestDigest,
		&price, &fee, &total, &r.Input, &r.InputSHA256, &status, &r.DecidedBy, &decidedAt, &remember, &rawExec,
		&created, &expires, &approvers, &budgets))
	if err != nil {
		return storage.ApprovalRequest{}, err
	}
	if r.ID, err = parseID(rawID); err != nil {
		return storage.ApprovalRequest{}, err
	}
	if r.QuoteID, err = parseID(rawQuote); err != nil {
		return storage.ApprovalRequest{}, err
	}
	if rawExec != nil {
		if r.ExecutionID, err = parseID(rawExec); err != nil {
			return storage.ApprovalRequest{}, err
		}
	}
	if approvers != nil {
		if err := json.Unmarshal([]byte(*approvers), &r.Approvers); err != nil {
			return storage.ApprovalRequest{}, fmt.Errorf("sqlite: stored approvers are not readable: %w", err)
		}
	}
	if budgets != nil {
		if err := json.Unmarshal([]byte(*budgets), &r.Budgets); err != nil {
			return storage.ApprovalRequest{}, fmt.Errorf("sqlite: stored budgets are not readable: %w", err)
		}
	}
	r.PriceUSD, r.FeeUSD, r.TotalUSD = fromUnits(price), fromUnits(fee), fromUnits(total)
	r.Status, r.Remember = storage.ApprovalStatus(status), toolgatetype.StandingMode(remember)
	r.DecidedAt, r.CreatedAt, r.ExpiresAt = nullNanos(decidedAt), fromNanos(created), fromNanos(expires)
	if r.Input == nil {
		r.Input = []byte{}
	}
	return r, nil
}

// listColumn encodes a request's approvers or budgets for their column, a
// JSON array that the triggers of 0016_rules.sql and
// 0017_request_budgets.sql index by approver and by budget: NULL when
// there are none.
func listColumn(ids []string) any {
	if len(ids) == 0 {
		return nil
	}
	return jsonStrings(ids)
}

// nullableID stores uuid.Nil as NULL.
func nullableID(id uuid.UUID) any {
	if id == uuid.Nil {
		return nil
	}
	return idBytes(id)
}

// nullableNanos stores the zero time as NULL.
func nullableNanos(n int64, zero bool) any {
	if zero {
		return nil
	}
	return n
}

// CreateApprovalRequest stores a new approval request (an empty Status is
// stored as pending) and extends its quote's life to the request's, in one
// write: a call admitted on the quote meanwhile, in this process or
// another, is admitted before or after it, never between the check and the
// change. ErrAlreadyExists when the id is taken; a
// *storage.PendingRequestError when the same request is pending already,
// which leaves the quote as it was. r.Event is inserted in the same write,
// only when the request is stored.
func (s *Store) CreateApprovalRequest(ctx context.Context, r storage.ApprovalRequest) error {
	status := r.Status
	if status == "" {
		status = storage.ApprovalPending
	}
	var amounts [3]int64
	for i, d := range [...]decimal.Decimal{r.PriceUSD, r.FeeUSD, r.TotalUSD} {
		u, err := units(d)
		if err != nil {
			return err
		}
		amounts[i] = u
	}
	input := r.Input
	if input == nil {
		input = []byte{} // the column is NOT NULL; an empty input is still an input
	}
	if r.Event != nil {
		if err := r.Event.Check(); err != nil {
			return err
		}
	}
	return s.write(ctx, func(tx *writeTx) error {
		if err := extendQuote(tx, r); err != nil {
			return err
		}
		if status == storage.ApprovalPending {
			// The same request pending already is asked once. The write
			// holds the file's write lock, so no other can slip in
			// between this look and the insert.
			same, err := scanApprovalRequest(tx.queryRow(samePendingSQL,
				r.Principal, r.ToolID, r.InputSHA256, idBytes(r.QuoteID), nanos(r.CreatedAt)))
			switch {
			case err == nil:
				return &storage.PendingRequestError{Pending: same}
			case !isNotFound(err):
				return err
			}
		}
		_, err := tx.exec(`
			INSERT INTO approval_requests (`+approvalRequestColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			idBytes(r.ID), r.Principal, idBytes(r.QuoteID), r.ToolID, r.ToolSlug, r.ManifestDigest,
			amounts[0], amounts[1], amounts[2], input, r.InputSHA256, string(status), r.DecidedBy,
			nullableNanos(nanos(r.DecidedAt), r.DecidedAt.IsZero()), string(r.Remember), nullableID(r.ExecutionID),
			nanos(r.CreatedAt), nanos(r.ExpiresAt), listColumn(r.Approvers), listColumn(r.Budgets))
		if err != nil || r.Event == nil {
			return err
		}
		_, err = addEvent(tx, *r.Event)
		return err
	})
}

// extendQuote makes r's quote live until r.ExpiresAt, if it would end
// sooner, once it is found r.Principal's, open and live at r.CreatedAt.
func extendQuote(tx *writeTx, r storage.ApprovalRequest) error {
	n, err := tx.exec(`
		UPDATE quotes SET expires_at = MAX(expires_at, ?)
		WHERE id = ? AND principal = ? AND state = 'open' AND expires_at > ?`,
		nanos(r.ExpiresAt), idBytes(r.QuoteID), r.Principal, nanos(r.CreatedAt))
	if err != nil || n == 1 {
		return err
	}
	q, err := getQuote(tx, r.QuoteID)
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

// samePendingSQL finds the live pending request of a principal's call
// (tool, input hash and quote), from the index on the first three.
const samePendingSQL = `SELECT ` + approvalRequestColumns + ` FROM approval_requests
	WHERE principal = ? AND tool_id = ? AND input_sha256 = ? AND quote_id = ?
		AND status = 'pending' AND expires_at > ?
	ORDER BY created_at DESC, id DESC LIMIT 1`

// getApprovalRequestSQL reads the request with id ? for scanApprovalRequest.
const getApprovalRequestSQL = `SELECT ` + approvalRequestColumns + ` FROM approval_requests WHERE id = ?`

// GetApprovalRequest returns the approval request with this id. ErrNotFound
// if absent.
func (s *Store) GetApprovalRequest(ctx context.Context, id uuid.UUID) (storage.ApprovalRequest, error) {
	return scanApprovalRequest(s.pool(ctx).queryRow(getApprovalRequestSQL, idBytes(id)))
}

// ListApprovalRequests returns the requests f selects, newest first. The
// cursor compares (created_at, id) as a row value; SQLite compares BLOBs
// byte by byte, as storage.ApprovalCursor does. The principals and
// statuses are bound as one parameter each, JSON arrays read with
// json_each, so the statement text, and its prepared statement, is the
// same whatever their number. A tool and an input hash are compared as
// plain equalities, added only when set, so that the planner answers them
// from the index on them.
//
// A listing is up to three merged: the principals' requests, from the
// principal index, which stops at the limit; and the requests of the
// budgets (f.Budgets) of other principals, from approval_request_budgets,
// and, in an approver's view (f.Approver), the requests named for the
// approver, from approval_request_approvers, the other two then keeping
// to requests that name none.
func (s *Store) ListApprovalRequests(ctx context.Context, f storage.ApprovalRequestFilter) ([]storage.ApprovalRequest, error) {
	if !f.Selects() {
		return nil, nil
	}
	statuses := make([]string, len(f.Statuses))
	for i, st := range f.Statuses {
		statuses[i] = string(st)
	}
	var afterAt, afterID any
	if f.After != nil {
		afterAt, afterID = nanos(f.After.CreatedAt), idBytes(f.After.ID)
	}
	args := []any{jsonStrings(f.Principals), jsonStrings(statuses),
		nullableNanos(nanos(f.LiveAt), f.LiveAt.IsZero()), nullableNanos(nanos(f.ExpiredAt), f.ExpiredAt.IsZero()),
		afterAt, afterID, f.Limit, f.ToolID, f.InputSHA256, f.Approver, jsonStrings(f.Budgets)}
	oneCall := ""
	highest := 7
	if f.ToolID != "" {
		oneCall += " AND tool_id = ?8"
		highest = 8
	}
	if f.InputSHA256 != "" {
		oneCall += " AND input_sha256 = ?9"
		highest = 9
	}
	unnamed := ""
	if f.Approver != "" {
		unnamed = " AND approvers IS NULL"
		highest = 10
	}
	if len(f.Budgets) > 0 {
		highest = 11
	}
	// A statement takes as many arguments as its highest parameter number.
	args = args[:highest]
	filters := `
			AND (json_array_length(?2) = 0 OR status IN (SELECT value FROM json_each(?2)))
			AND (?3 IS NULL OR expires_at > ?3)
			AND (?4 IS NULL OR expires_at <= ?4)
			AND (?5 IS NULL OR (created_at, id) < (?5, ?6))` + oneCall
	var branches []string
	if len(f.Principals) > 0 {
		branches = append(branches, `
			SELECT `+approvalRequestColumns+` FROM approval_requests
			WHERE principal IN (SELECT value FROM json_each(?1))`+unnamed+filters+`
			ORDER BY created_at DESC, id DESC
			LIMIT ?7`)
	}
	if len(f.Budgets) > 0 {
		// The principals' own requests are the first branch's to give.
		branches = append(branches, `
			SELECT `+approvalRequestColumns+` FROM approval_requests
			WHERE id IN (SELECT request_id FROM approval_request_budgets
				WHERE budget IN (SELECT value FROM json_each(?11)) AND (?5 IS NULL OR (created_at, request_id) < (?5, ?6)))
				AND principal NOT IN (SELECT value FROM json_each(?1))`+unnamed+filters+`
			ORDER BY created_at DESC, id DESC
			LIMIT ?7`)
	}
	if f.Approver != "" {
		// The named requests of one approver are few (a rule's asks,
		// until they expire and are pruned): they are read whole and
		// sorted.
		branches = append(branches, `
			SELECT `+approvalRequestColumns+` FROM approval_requests
			WHERE id IN (SELECT request_id FROM approval_request_approvers
				WHERE approver = ?10 AND (?5 IS NULL OR (created_at, request_id) < (?5, ?6)))`+filters)
	}
	query := branches[0]
	if len(branches) > 1 || f.Approver != "" {
		for i, b := range branches {
			branches[i] = "SELECT * FROM (" + b + ")"
		}
		query = strings.Join(branches, "\n\t\tUNION ALL\n") + `
		ORDER BY created_at DESC, id DESC
		LIMIT ?7`
	}
	rows, err := s.pool(ctx).query(query, args...)
	if err != nil {
		return nil, err
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
	return out, translate(rows.Err())
}

// jsonStrings encodes strings as a JSON array for json_each.
func jsonStrings(ss []string) string {
	if ss == nil {
		ss = []string{}
	}
	b, _ := json.Marshal(ss) // strings always encode
	return string(b)
}

// DecideApprovalRequest decides a pending, unexpired request in one write:
// its check and its change run in the file's write transaction, so of
// racing decisions, in this process or another, exactly one finds the
// request pending. A remembered standing approval is written in the same
// write, and so is d.Event, only when the decision is.
func (s *Store) DecideApprovalRequest(ctx context.Context, d storage.ApprovalDecision) (storage.ApprovalRequest, error) {
	if d.Event != nil {
		if err := d.Event.Check(); err != nil {
			return storage.ApprovalRequest{}, err
		}
	}
	var out storage.ApprovalRequest
	err := s.write(ctx, func(tx *writeTx) error {
		r, err := scanApprovalRequest(tx.queryRow(getApprovalRequestSQL, idBytes(d.ID)))
		switch {
		case err != nil:
			return err
		case r.Status != storage.ApprovalPending:
			return storage.ErrAlreadyDecided
		case !r.ExpiresAt.After(d.Now):
			return storage.ErrApprovalExpired
		}
		r.Status, r.DecidedBy, r.DecidedAt = storage.ApprovalDenied, d.DecidedBy, d.Now
		if d.Approve {
			r.Status, r.Remember = storage.ApprovalApproved, d.Remember
		}
		if _, err := tx.exec(`UPDATE approval_requests SET status = ?, decided_by = ?, decided_at = ?, remember = ? WHERE id = ?`,
			string(r.Status), r.DecidedBy, nanos(r.DecidedAt), string(r.Remember), idBytes(r.ID)); err != nil {
			return err
		}
		if d.Standing() {
			if err := putApproval(tx, storage.Approval{
				Principal: r.Principal, ToolID: r.ToolID, ManifestDigest: r.ManifestDigest,
				Mode: r.Remember, ApprovedBy: d.DecidedBy, UpdatedAt: d.Now,
			}); err != nil {
				return err
			}
		}
		if d.Event != nil {
			if _, err := addEvent(tx, *d.Event); err != nil {
				return err
			}
		}
		out = r
		return nil
	})
	if err != nil {
		return storage.ApprovalRequest{}, err
	}
	return out, nil
}

// checkGrant is a new admission's check of its grant, inside its write:
// approved and unused, of this principal, quote and tool.
func checkGrant(tx *writeTx, b storage.Begin) error {
	if b.GrantID == uuid.Nil {
		return nil
	}
	var ok bool
	err := translate(tx.queryRow(`
		SELECT EXISTS (SELECT 1 FROM approval_requests
			WHERE id = ? AND status = 'approved' AND principal = ? AND quote_id = ? AND tool_id = ?)`,
		idBytes(b.GrantID), b.Principal, idBytes(b.QuoteID), b.ToolID).Scan(&ok))
	switch {
	case err != nil:
		return err
	case !ok:
		return storage.ErrGrantUnusable
	}
	return nil
}

// useGrant marks b's grant used by b's execution.
func useGrant(tx *writeTx, b storage.Begin) error {
	if b.GrantID == uuid.Nil {
		return nil
	}
	_, err := tx.exec(`UPDATE approval_requests SET status = 'used', execution_id = ? WHERE id = ?`,
		idBytes(b.ExecutionID), idBytes(b.GrantID))
	return err
}

// pruneApprovalRequests deletes up to n requests that expired before the
// cutoff, whatever their state: no call can use them any more.
func pruneApprovalRequests(tx *writeTx, before int64, n int) (int, error) {
	deleted, err := tx.exec(`
		DELETE FROM approval_requests WHERE id IN (
			SELECT id FROM approval_requests WHERE expires_at < ?1 ORDER BY expires_at LIMIT ?2)`, before, n)
	return int(deleted), err
}
