package toolgate

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/pagecursor"
	"github.com/toolgate/toolgate/internal/toolrun"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ListExecutions returns a page of the caller's finished executions, newest
// first, with a cursor to the next. Executions created while a caller pages
// through never appear in later pages, nor shift them: the cursor is the
// position of the last item seen. Executions are kept as long as
// Config.IdempotencyRetention says.
//
// A filter out of range, or a cursor that this caller's listing with these
// filters did not give, is refused with invalid_request naming the
// parameter ([toolgatetype.Error.Parameter]).
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
	}
	if e.Approval != "" {
		s.Approval = &toolgatetype.ApprovalRecord{Kind: e.Approval}
		if e.GrantID != uuid.Nil {
			s.Approval.GrantID = e.GrantID.String()
		}
	}
	return s
}

// Spend sums what the caller was charged over a window, by tool or by UTC
// day: completed executions only, since failed ones are never charged. It
// counts executions still kept (Config.IdempotencyRetention).
func (g *Gateway) Spend(ctx context.Context, principal string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	return g.spend(ctx, []string{principal}, f)
}

// ApproverSpend is Spend for an approver: what every principal the
// approver approves for was charged, together.
func (g *Gateway) ApproverSpend(ctx context.Context, approver string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	principals, err := g.approverScope(ctx, approver)
	if err != nil {
		return nil, err
	}
	return g.spend(ctx, principals, f)
}

func (g *Gateway) spend(ctx context.Context, principals []string, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	now := g.clock.Now().UTC()
	// Days belong to a budget's calendar; a principal's spend has none, so
	// they are refused rather than read as UTC's without saying so.
	if f.FromDay != "" {
		return nil, paramError("since", "since must be an instant: days are a budget's (BudgetSpend)")
	}
	if f.ToDay != "" {
		return nil, paramError("until", "until must be an instant: days are a budget's (BudgetSpend)")
	}
	if f.GroupBy == "" {
		f.GroupBy = toolgatetype.SpendByTool
	}
	if f.GroupBy != toolgatetype.SpendByTool && f.GroupBy != toolgatetype.SpendByDay {
		return nil, paramError("groupBy", "groupBy must be %s or %s", toolgatetype.SpendByTool, toolgatetype.SpendByDay)
	}
	if f.Until.IsZero() {
		f.Until = now
	}
	if f.Since.IsZero() {
		f.Since = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		if !f.Since.Before(f.Until) {
			return nil, paramError("until", "until must be later than the start of the current UTC month, since's default")
		}
	}
	if !f.Since.Before(f.Until) {
		return nil, paramError("since", "since must be earlier than until")
	}
	var groups []storage.SpendGroup
	if len(principals) > 0 {
		var err error
		groups, err = g.store.SpendSummary(ctx, storage.SpendQuery{Principals: principals, Since: f.Since, Until: f.Until, GroupBy: f.GroupBy})
		if err != nil {
			return nil, internalError(err)
		}
	}
	return spendSummary(f.Since, f.Until, f.GroupBy, groups), nil
}

// spendSummary is what callers are shown of the store's groups: each
// group's sum and the total, as 4-decimal text.
func spendSummary(since, until time.Time, by toolgatetype.SpendGrouping, groups []storage.SpendGroup) *toolgatetype.SpendSummary {
	out := &toolgatetype.SpendSummary{Since: since.UTC(), Until: until.UTC(), GroupBy: by, Groups: make([]toolgatetype.SpendGroup, len(groups))}
	total := decimal.Zero
	for i, gr := range groups {
		total = total.Add(gr.TotalUSD)
		out.Groups[i] = toolgatetype.SpendGroup{Key: gr.Key, TotalUSD: toolgatetype.FormatUSD(gr.TotalUSD), Count: gr.Count}
	}
	out.TotalUSD = toolgatetype.FormatUSD(total)
	return out
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
