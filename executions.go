package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/pagecursor"
	"github.com/toolgate/toolgate/internal/receipting"
	"github.com/toolgate/toolgate/internal/ruling"
	"github.com/toolgate/toolgate/internal/toolrun"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ListExecutions returns a page of the caller's finished executions, newest
// first, with a cursor to the next, which new executions never shift. A bad
// filter or cursor is invalid_request naming the parameter.
func (g *Gateway) ListExecutions(ctx context.Context, principal string, f toolgatetype.ExecutionFilter) (*toolgatetype.ExecutionPage, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	return g.listExecutions(ctx, "principal\x00"+principal, []string{principal}, f)
}

// ListApproverExecutions is ListExecutions for an approver: the executions
// of every principal the approver approves for, merged, newest first. Its
// cursors are the approver's own.
func (g *Gateway) ListApproverExecutions(ctx context.Context, approver string, f toolgatetype.ExecutionFilter) (*toolgatetype.ExecutionPage, error) {
	principals, err := g.approverScope(ctx, approver)
	if err != nil {
		return nil, err
	}
	return g.listExecutions(ctx, "approver\x00"+approver, principals, f)
}

// approverScope is whose executions an approver reads.
func (g *Gateway) approverScope(ctx context.Context, approver string) ([]string, error) {
	if approver == "" {
		return nil, newError(toolgatetype.CodeApproverRequired, "only an approver reads other principals' executions")
	}
	return g.approvedPrincipals(ctx, approver)
}

// listExecutions lists the executions of principals. scope names who lists
// them, and binds the cursors it gives to that lister.
func (g *Gateway) listExecutions(ctx context.Context, scope string, principals []string, f toolgatetype.ExecutionFilter) (*toolgatetype.ExecutionPage, error) {
	q := storage.ExecutionQuery{Principals: principals, Since: f.Since, Until: f.Until, Limit: f.Limit}
	switch {
	case f.Limit == 0:
		q.Limit = toolgatetype.DefaultListLimit
	case f.Limit < 1 || f.Limit > toolgatetype.MaxListLimit:
		return nil, paramError("limit", "limit must be a whole number from 1 to %d", toolgatetype.MaxListLimit)
	}
	switch f.Status {
	case "":
	case toolgatetype.StatusCompleted, toolgatetype.StatusFailed, toolgatetype.StatusAmbiguous:
		q.Status = f.Status
	default:
		return nil, paramError("status", "status must be %s, %s or %s", toolgatetype.StatusCompleted, toolgatetype.StatusFailed, toolgatetype.StatusAmbiguous)
	}
	if err := textError("tool", f.Tool); err != nil {
		return nil, err
	}
	if f.Tool != "" {
		q.ToolSlug = g.slugFilter(f.Tool)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return nil, paramError("until", "until must be later than since")
	}
	binding := listingBinding(scope, q)
	if f.Cursor != "" {
		pos, ok := pagecursor.Decode(f.Cursor, binding)
		if !ok {
			return nil, paramError("cursor", "cursor is not one this listing gave: pass nextCursor from the previous page, with the same filters")
		}
		q.After = &pos
	}
	// One more than a page tells whether another page follows.
	want := q.Limit
	q.Limit++
	var list []storage.Execution
	if len(principals) > 0 {
		var err error
		if list, err = g.store.ListExecutions(ctx, q); err != nil {
			return nil, internalError(err)
		}
	}
	page := &toolgatetype.ExecutionPage{Executions: make([]toolgatetype.ExecutionSummary, 0, min(len(list), want))}
	for i, e := range list {
		if i == want {
			last := list[i-1]
			next := pagecursor.Encode(storage.ExecutionPosition{CreatedAt: last.CreatedAt, ID: last.ID}, binding)
			page.NextCursor = &next
			break
		}
		page.Executions = append(page.Executions, g.summarize(e))
	}
	return page, nil
}

// slugFilter resolves a tool filter to the slug executions are stored
// under: the registered tool's, or the text as given, which finds the past
// executions of a tool no longer registered (and nothing otherwise).
func (g *Gateway) slugFilter(tool string) string {
	if v, err := g.registry.Lookup(tool); err == nil {
		return v.Tool.Slug
	}
	return tool
}

// listingBinding is what a listing's cursors are bound to: who lists, and
// with which filters. The page size may change from page to page.
func listingBinding(scope string, q storage.ExecutionQuery) []byte {
	var b strings.Builder
	for _, part := range []string{scope, q.ToolSlug, string(q.Status), stamp(q.Since), stamp(q.Until)} {
		b.WriteString(part)
		b.WriteByte(0)
	}
	return []byte(b.String())
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// summarize turns a stored execution into a listing item. The tool's name
// is the registered tool's; one no longer registered shows its slug.
func (g *Gateway) summarize(e storage.Execution) toolgatetype.ExecutionSummary {
	ref := toolgatetype.ToolRef{ID: e.ToolID, Slug: e.ToolSlug, Name: e.ToolSlug}
	if v, err := g.registry.Lookup(e.ToolID); err == nil {
		ref = toolrun.Ref(v.Tool)
	}
	if ref.Slug == "" {
		ref.Slug, ref.Name = e.ToolID, e.ToolID
	}
	s := toolgatetype.ExecutionSummary{
		ID:             e.ID.String(),
		Principal:      e.Principal,
		Tool:           ref,
		ManifestDigest: e.ManifestDigest,
		Status:         e.Status,
		Cost:           toolgatetype.Cost{PriceUSD: toolgatetype.FormatUSD(e.PriceUSD), FeeUSD: toolgatetype.FormatUSD(e.FeeUSD), TotalUSD: toolgatetype.FormatUSD(e.AmountUSD), Currency: "USD"},
		CreatedAt:      e.CreatedAt,
		FinishedAt:     e.FinishedAt,
		Rules:          ruling.FromStore(e.Rules),
	}
	if e.Approval != "" {
		s.Approval = &toolgatetype.ApprovalRecord{Kind: e.Approval}
		if e.GrantID != uuid.Nil {
			s.Approval.GrantID = e.GrantID.String()
		}
	}
	return s
}

// paramError is invalid_request naming the parameter at fault.
func paramError(param, format string, args ...any) *toolgatetype.Error {
	e := newError(toolgatetype.CodeInvalidRequest, format, args...)
	e.Parameter = param
	return e
}

// GetExecution returns one of the caller's finished executions; another
// caller's is reported as not found.
func (g *Gateway) GetExecution(ctx context.Context, principal, id string) (*toolgatetype.CallResult, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	eid, err := uuid.Parse(id)
	if err != nil {
		return nil, newError(toolgatetype.CodeExecutionNotFound, "no execution %q exists for this caller", id)
	}
	e, err := g.store.GetExecution(ctx, eid)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (e.Principal != principal || e.Status == storage.ExecutionRunning)) {
		return nil, newError(toolgatetype.CodeExecutionNotFound, "no finished execution %s exists for this caller", id)
	}
	if err != nil {
		return nil, internalError(err)
	}
	res, err := executor.Replay(e.Response)
	if err != nil {
		return nil, err
	}
	res.Replayed = false
	return res, nil
}

// ResolveExecution records approver's finding about an ambiguous execution
// of one of the principals it approves for: completed (charged) or failed
// (its reserved amount released), exactly once (a second resolution gets
// execution_already_resolved). It returns the resolved execution, which a
// replay of the call's Idempotency-Key returns from then on.
func (g *Gateway) ResolveExecution(ctx context.Context, approver, id string, r toolgatetype.ResolveRequest) (*toolgatetype.CallResult, error) {
	if err := validPrincipal(approver); err != nil {
		return nil, err
	}
	if r.Outcome != toolgatetype.StatusCompleted && r.Outcome != toolgatetype.StatusFailed {
		e := newError(toolgatetype.CodeInvalidRequest, "outcome must be %q or %q", toolgatetype.StatusCompleted, toolgatetype.StatusFailed)
		e.Parameter = "outcome"
		return nil, e
	}
	if n := utf8.RuneCountInString(r.Note); n > toolgatetype.MaxResolutionNote || !utf8.ValidString(r.Note) {
		e := newError(toolgatetype.CodeInvalidRequest, "note must be UTF-8 text of at most %d characters", toolgatetype.MaxResolutionNote)
		e.Parameter = "note"
		return nil, e
	}
	if err := textError("note", r.Note); err != nil {
		return nil, err
	}
	notFound := newError(toolgatetype.CodeExecutionNotFound, "no execution %q exists for you", id)
	eid, err := uuid.Parse(id)
	if err != nil {
		return nil, notFound
	}
	e, err := g.store.GetExecution(ctx, eid)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, internalError(err)
	}
	ok, err := g.approves(ctx, approver, e.Principal)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound
	}
	if e.Status != storage.ExecutionAmbiguous {
		return nil, notAmbiguous(e)
	}
	stored, err := executor.Replay(e.Response)
	if err != nil {
		return nil, err
	}
	now := g.clock.Now().UTC()
	prior := stored.Execution.Receipt
	exec := resolved(stored.Execution, r, approver, now)
	exec.Receipt = nil // the resolution's own is added below
	body, err := toolrun.Encode(exec)
	if err != nil {
		return nil, internalError(err)
	}
	var alerts []storage.BudgetAlert
	if r.Outcome == toolgatetype.StatusCompleted {
		alerts = g.budgetAlerts(e.Budgets, now)
	}
	var sealed toolgatetype.SignedReceipt
	var kept []byte
	seal := g.receipts.Signer.Seal(receipting.Resolution(prior, e, &exec), &sealed)
	_, err = g.store.ResolveExecution(ctx, storage.Resolve{
		ExecutionID: eid,
		Outcome:     r.Outcome,
		ResolvedBy:  approver,
		Note:        r.Note,
		Response:    body,
		Now:         now,
		Alerts:      alerts,
		Seal: func(seq int64, prev string) (storage.Sealed, error) {
			out, err := seal(seq, prev)
			kept = storage.WithReceipt(body, out.Receipt)
			return out, err
		},
	})
	switch {
	case errors.Is(err, storage.ErrAlreadyResolved):
		return nil, newError(toolgatetype.CodeExecutionAlreadyResolved, "execution %s was already resolved", id)
	case errors.Is(err, storage.ErrNotAmbiguous):
		return nil, newError(toolgatetype.CodeExecutionNotAmbiguous, "execution %s is not ambiguous: its outcome is known", id)
	case errors.Is(err, storage.ErrNotFound):
		return nil, notFound
	case err != nil:
		return nil, internalError(err)
	}
	if len(alerts) > 0 {
		g.events.Wake()
	}
	g.log.InfoContext(ctx, "ambiguous call resolved", "execution", id, "principal", e.Principal, "outcome", string(r.Outcome), "resolvedBy", approver)
	exec.Receipt = &sealed
	return &toolgatetype.CallResult{Execution: exec, Body: kept}, nil
}

// notAmbiguous refuses the resolution of an execution whose outcome is
// known, saying which: one already resolved is told apart from one that
// never was ambiguous.
func notAmbiguous(e storage.Execution) error {
	if e.Resolution != nil {
		return newError(toolgatetype.CodeExecutionAlreadyResolved, "execution %s was already resolved as %s by %s", e.ID, e.Resolution.Outcome, e.Resolution.ResolvedBy)
	}
	return newError(toolgatetype.CodeExecutionNotAmbiguous, "execution %s is %s, not ambiguous: its outcome is known", e.ID, e.Status)
}

// resolved is the ambiguous execution exec as a person resolved it. Its
// output stays null either way: nobody saw what the provider answered.
func resolved(exec toolgatetype.Execution, r toolgatetype.ResolveRequest, by string, at time.Time) toolgatetype.Execution {
	exec.Status = r.Outcome
	exec.Output = json.RawMessage("null")
	exec.Resolution = &toolgatetype.Resolution{Outcome: r.Outcome, ResolvedBy: by, ResolvedAt: at, Note: r.Note}
	exec.Error = nil
	if r.Outcome == toolgatetype.StatusFailed {
		exec.Error = &toolgatetype.ExecutionError{Code: toolgatetype.CodeResolvedFailed,
			Message: fmt.Sprintf("%s found that the provider did not run this call; its amount was released and nothing was charged", by)}
	}
	return exec
}

// Receipts returns up to limit of principal's receipts with seq above
// after, in seq order, each as it was signed: the page the chain is read
// and verified by, offline, with the keys of ReceiptKeys.
func (g *Gateway) Receipts(ctx context.Context, principal string, after int64, limit int) (toolgatetype.ReceiptPage, error) {
	if err := validPrincipal(principal); err != nil {
		return toolgatetype.ReceiptPage{}, err
	}
	if after < 0 {
		e := newError(toolgatetype.CodeInvalidRequest, "after must be a seq, 0 or more")
		e.Parameter = "after"
		return toolgatetype.ReceiptPage{}, e
	}
	if limit <= 0 || limit > toolgatetype.MaxReceiptPage {
		e := newError(toolgatetype.CodeInvalidRequest, "limit must be 1 to %d", toolgatetype.MaxReceiptPage)
		e.Parameter = "limit"
		return toolgatetype.ReceiptPage{}, e
	}
	// One more than asked says whether there is a next page, but for the
	// largest page, which says so whenever it is full.
	got, err := g.store.ListReceipts(ctx, principal, after, min(limit+1, toolgatetype.MaxReceiptPage))
	if err != nil {
		return toolgatetype.ReceiptPage{}, internalError(err)
	}
	more := len(got) > limit || (limit == toolgatetype.MaxReceiptPage && len(got) == limit)
	got = got[:min(len(got), limit)]
	page := toolgatetype.ReceiptPage{Receipts: make([]json.RawMessage, len(got))}
	for i, r := range got {
		page.Receipts[i] = r.Signed
	}
	if more {
		next := got[len(got)-1].Seq
		page.Next = &next
	}
	return page, nil
}

// ReceiptsFor is Receipts of a principal approver approves for: the chain
// an approver audits. A principal it does not approve for is not found, as
// on the other routes of an approver.
func (g *Gateway) ReceiptsFor(ctx context.Context, approver, principal string, after int64, limit int) (toolgatetype.ReceiptPage, error) {
	if err := g.requireApproverOf(ctx, approver, principal); err != nil {
		return toolgatetype.ReceiptPage{}, err
	}
	return g.Receipts(ctx, principal, after, limit)
}

// ReceiptKeys is the public key set receipts verify with: the key signing
// now and every retired one configured.
func (g *Gateway) ReceiptKeys() toolgatetype.ReceiptKeys {
	return g.receipts.Document()
}

// pruneBatch is how many records of each kind one Prune deletes at most, so
// a pass never holds the store for long; a backlog clears over later passes.
const pruneBatch = 1000

// Prune deletes what the retention policy no longer needs, at most 1,000
// records of each kind a pass. An ambiguous execution nobody has resolved
// is kept, however old: it still needs a person.
func (g *Gateway) Prune(ctx context.Context) (storage.PruneResult, error) {
	now := g.clock.Now().UTC()
	prevMonth := time.Date(now.Year(), now.Month()-1, 1, 0, 0, 0, 0, time.UTC)
	return g.store.Prune(ctx, storage.Prune{
		IdempotencyBefore:      now.Add(-g.cfg.IdempotencyRetention),
		QuotesBefore:           now.Add(-g.cfg.IdempotencyRetention),
		LedgerBefore:           prevMonth,
		ApprovalRequestsBefore: now.Add(-g.cfg.IdempotencyRetention),
		EventsBefore:           now.Add(-g.cfg.IdempotencyRetention),
		Limit:                  pruneBatch,
	})
}

// RunRetention prunes every interval until ctx is done. Servers run it in
// a goroutine; with several instances on one database, each may run it, since
// pruning is idempotent.
func (g *Gateway) RunRetention(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for {
				res, err := g.Prune(ctx)
				if err != nil {
					g.log.WarnContext(ctx, "retention pass failed", "error", err)
					break
				}
				// A full batch means a backlog: keep going until it clears.
				if res.Idempotency < pruneBatch && res.Quotes < pruneBatch && res.Ledger < pruneBatch &&
					res.ApprovalRequests < pruneBatch {
					break
				}
			}
		}
	}
}
