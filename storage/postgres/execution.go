package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/internal/sqlstore"
	"github.com/toolgate/toolgate/toolgatetype"
)

// executionColumns is the select list scanExecution reads, with the
// response; listedColumns is the same without it (a listing never shows
// outputs, so it never reads them). An execution from before the audit
// columns whose quote was gone shows its total as its price, with no fee.
// The resolution's columns are NULL but for a resolved execution, the
// budgets' but for a call in some, and the rules' but for a call some
// matched (see rulesColumn).
const (
	auditColumns = `id, principal, tool_id, quote_id, idempotency_key, status,
	amount_usd::text, charged, created_at, finished_at, tool_slug, manifest_digest,
	COALESCE(price_usd, amount_usd)::text, COALESCE(fee_usd, 0)::text, approval, grant_id,
	resolution_outcome, resolved_by, resolved_at, resolution_note, budgets, budget_days, rules`
	executionColumns = auditColumns + `, response, ` + receiptColumn
	listedColumns    = auditColumns + `, NULL::bytea, NULL::bytea`
	// returnedColumns are executionColumns as an UPDATE's RETURNING reads
	// them, without the receipt: a receipt the same statement inserts is
	// not visible to it, and a takeover's execution runs, so has none.
	returnedColumns = auditColumns + `, response, NULL::bytea`
)

// receiptColumn is the signed receipt the execution's response is read
// with (migration 0018), off the receipts primary key; NULL when it names
// none.
const receiptColumn = `(SELECT r.signed FROM {schema}.receipts r
		WHERE r.principal = executions.principal AND r.seq = executions.receipt_seq)`

func scanExecution(row pgx.Row) (storage.Execution, error) {
	var (
		e                  storage.Execution
		status, approval   string
		amount, price, fee string
		finished, resolved *time.Time
		grant              *[16]byte // NULL without a grant
		outcome, by, note  *string   // NULL unless resolved
		budgets            []string  // NULL in no budget
		days               []time.Time
		rules              []byte // NULL when no rule matched
		signed             []byte // the receipt the response is read with
	)
	if err := row.Scan(bytesAt(&e.ID), &e.Principal, &e.ToolID, bytesAt(&e.QuoteID), &e.IdempotencyKey, &status,
		&amount, &e.Charged, &e.CreatedAt, &finished, &e.ToolSlug, &e.ManifestDigest, &price, &fee,
		&approval, &grant, &outcome, &by, &resolved, &note, &budgets, &days, &rules, &e.Response, &signed); err != nil {
		return storage.Execution{}, translate(err)
	}
	e.Response = storage.WithReceipt(e.Response, signed)
	if outcome != nil {
		e.Resolution = &storage.ExecutionResolution{
			Outcome:    storage.ExecutionStatus(*outcome),
			ResolvedBy: deref(by),
			ResolvedAt: nullTime(resolved),
			Note:       deref(note),
		}
	}
	if grant != nil {
		e.GrantID = *grant
	}
	e.Budgets = budgetDays(budgets, days)
	var err error
	if e.Rules, err = sqlstore.ParseRules(rules); err != nil {
		return storage.Execution{}, fmt.Errorf("postgres: %w", err)
	}
	if e.AmountUSD, err = parseDecimal(amount); err != nil {
		return storage.Execution{}, err
	}
	if e.PriceUSD, err = parseDecimal(price); err != nil {
		return storage.Execution{}, err
	}
	if e.FeeUSD, err = parseDecimal(fee); err != nil {
		return storage.Execution{}, err
	}
	e.Status = storage.ExecutionStatus(status)
	e.Approval = toolgatetype.ApprovalKind(approval)
	e.CreatedAt = utc(e.CreatedAt)
	e.FinishedAt = nullTime(finished)
	return e, nil
}

// rulesColumn encodes the rules that matched a call for the
// executions.rules column (migration 0021): jsonb, NULL when none did.
func rulesColumn(rules []storage.RuleUse) ([]byte, error) {
	col, err := sqlstore.RulesJSON(rules)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return col, nil
}

// deref is the string s points to, or "" for NULL.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// GetExecution returns an execution by id. ErrNotFound if absent.
func (s *Store) GetExecution(ctx context.Context, id uuid.UUID) (storage.Execution, error) {
	return scanExecution(s.pool.QueryRow(ctx, s.sql(`SELECT `+executionColumns+` FROM {schema}.executions WHERE id = $1`), bytesOf(id)))
}
