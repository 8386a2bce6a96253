package sqlite

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/internal/sqlstore"
	"github.com/toolgate/toolgate/toolgatetype"
)

// executionColumns is the select list scanExecution reads, with the
// response; listedColumns is the same without it (a listing never shows
// outputs, so it never reads them). An execution from before the audit
// columns whose quote was gone shows its total as its price, with no fee.
// The resolution's columns are NULL but for a resolved execution, the
// budgets' but for a call in some (see budgets.go), and the rules' but for
// a call some matched (see rulesColumn).
const (
	auditColumns = `id, principal, tool_id, quote_id, idempotency_key, status,
	amount, charged, created_at, finished_at, tool_slug, manifest_digest,
	COALESCE(price, amount), COALESCE(fee, 0), approval, grant_id,
	resolution_outcome, resolved_by, resolved_at, resolution_note, budgets, rules`
	executionColumns = auditColumns + `, response, ` + receiptColumn
	listedColumns    = auditColumns + `, NULL, NULL`
	// begunColumns are executionColumns as BeginExecution's RETURNING
	// reads them: the execution it admitted or took over runs, so has no
	// response and no receipt yet.
	begunColumns = auditColumns + `, response, NULL`
)

// receiptColumn is the signed receipt the execution's response is read
// with (0013_receipt_once.sql), off the receipts primary key; NULL when it
// names none.
const receiptColumn = `(SELECT signed FROM receipts
		WHERE receipts.principal = executions.principal AND receipts.seq = executions.receipt_seq)`

func scanExecution(row scanner) (storage.Execution, error) {
	var (
		e                           storage.Execution
		id, quoteID                 []byte
		status, approval            string
		amount, created, price, fee int64
		finished, resolvedAt        *int64
		grant                       []byte
		outcome, resolvedBy, note   *string
		budgets, rules              *string
		signed                      []byte
	)
	if err := row.Scan(&id, &e.Principal, &e.ToolID, &quoteID, &e.IdempotencyKey, &status,
		&amount, &e.Charged, &created, &finished, &e.ToolSlug, &e.ManifestDigest, &price, &fee,
		&approval, &grant, &outcome, &resolvedBy, &resolvedAt, &note, &budgets, &rules, &e.Response, &signed); err != nil {
		return storage.Execution{}, translate(err)
	}
	e.Response = storage.WithReceipt(e.Response, signed)
	var err error
	if e.Budgets, err = parseBudgets(budgets); err != nil {
		return storage.Execution{}, err
	}
	if rules != nil {
		if e.Rules, err = sqlstore.ParseRules([]byte(*rules)); err != nil {
			return storage.Execution{}, fmt.Errorf("sqlite: %w", err)
		}
	}
	if outcome != nil {
		e.Resolution = &storage.ExecutionResolution{
			Outcome:    storage.ExecutionStatus(*outcome),
			ResolvedBy: deref(resolvedBy),
			ResolvedAt: nullNanos(resolvedAt),
			Note:       deref(note),
		}
	}
	if grant != nil {
		if e.GrantID, err = parseID(grant); err != nil {
			return storage.Execution{}, err
		}
	}
	e.PriceUSD, e.FeeUSD = fromUnits(price), fromUnits(fee)
	e.Approval = toolgatetype.ApprovalKind(approval)
	if e.ID, err = parseID(id); err != nil {
		return storage.Execution{}, err
	}
	if e.QuoteID, err = parseID(quoteID); err != nil {
		return storage.Execution{}, err
	}
	e.Status = storage.ExecutionStatus(status)
	e.AmountUSD = fromUnits(amount)
	e.CreatedAt = fromNanos(created)
	e.FinishedAt = nullNanos(finished)
	return e, nil
}

// rulesColumn encodes the rules that matched a call for the
// executions.rules column (0016_rules.sql): JSON text, NULL when none did.
func rulesColumn(rules []storage.RuleUse) (any, error) {
	col, err := sqlstore.RulesJSON(rules)
	switch {
	case err != nil:
		return nil, fmt.Errorf("sqlite: %w", err)
	case col == nil:
		return nil, nil
	}
	return string(col), nil
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
	return getExecution(s.pool(ctx), id)
}

// getExecution reads an execution by id. ErrNotFound if absent.
func getExecution(q reader, id uuid.UUID) (storage.Execution, error) {
	return scanExecution(q.queryRow(`SELECT `+executionColumns+` FROM executions WHERE id = ?`, idBytes(id)))
}
