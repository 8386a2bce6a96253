package toolgate

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/storage"
)

// Listing limits (contract section 17).
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ExecutionFilter selects a page of executions for ListExecutions. Every
// field is optional.
type ExecutionFilter struct {
	// Tool keeps one tool's executions: its slug or id. A slug that is no
	// longer registered still finds that tool's past executions.
	Tool string
	// Status keeps only completed or only failed executions.
	Status Status
	// Since and Until keep executions created in [Since, Until).
	Since, Until time.Time
	// Limit is the page size, 1 to 100; 0 means 20.
	Limit int
	// Cursor is the NextCursor of the page before, with the same filters.
	Cursor string
}

// ExecutionPage is one page of a caller's executions, newest first.
type ExecutionPage struct {
	Executions []ExecutionSummary `json:"executions"`
	// NextCursor fetches the page after this one; nil on the last page.
	NextCursor *string `json:"nextCursor"`
}

// ExecutionSummary is an execution as the audit trail lists it: everything
// but its output and error, which GetExecution returns.
type ExecutionSummary struct {
	ID        string  `json:"id"`
	Principal string  `json:"principal"`
	Tool      ToolRef `json:"tool"`
	// ManifestDigest is the digest of the tool version that ran.
	ManifestDigest string          `json:"manifestDigest"`
	Status         Status          `json:"status"`
	Cost           Cost            `json:"cost"`
	Approval       *ApprovalRecord `json:"approval"` // nil for calls made before it was recorded
	CreatedAt      time.Time       `json:"createdAt"`
	FinishedAt     time.Time       `json:"finishedAt"`
}

// ApprovalRecord is how a call was approved: "digest" (the call named the
// manifest digest), "standing" (the caller's policy covered it, so none was
// needed) or "grant" (an approver's grant, GrantID).
type ApprovalRecord struct {
	Kind    storage.ApprovalKind `json:"kind"`
	GrantID string               `json:"grantId,omitempty"`
}

// ListExecutions returns a page of the caller's finished executions, newest
// first, with a cursor to the next. Executions created while a caller pages
// through never appear in later pages, nor shift them: the cursor is the
// position of the last item seen. Executions are kept as long as
// Config.IdempotencyRetention says.
//
// A filter out of range, or a cursor that this caller's listing with these
// filters did not give, is refused with invalid_request naming the
// parameter (Error.Parameter).
func (g *Gateway) ListExecutions(ctx context.Context, principal string, f ExecutionFilter) (*ExecutionPage, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	return g.listExecutions(ctx, "principal\x00"+principal, []string{principal}, f)
}

// ListApproverExecutions is ListExecutions for an approver: the executions
// of every principal the approver approves for, merged, newest first. Its
// cursors are the approver's own.
func (g *Gateway) ListApproverExecutions(ctx context.Context, approver string, f ExecutionFilter) (*ExecutionPage, error) {
	principals, err := g.approverScope(ctx, approver)
	if err != nil {
		return nil, err
	}
	return g.listExecutions(ctx, "approver\x00"+approver, principals, f)
}

// approverScope is whose executions an approver reads.
func (g *Gateway) approverScope(ctx context.Context, approver string) ([]string, error) {
	if approver == "" {
		return nil, newError(CodeApproverRequired, "only an approver reads other principals' executions")
	}
	return g.approvedPrincipals(ctx, approver)
}

// listExecutions lists the executions of principals. scope names who lists
// them, and binds the cursors it gives to that lister.
func (g *Gateway) listExecutions(ctx context.Context, scope string, principals []string, f ExecutionFilter) (*ExecutionPage, error) {
	q := storage.ExecutionQuery{Principals: principals, Since: f.Since, Until: f.Until, Limit: f.Limit}
	switch {
	case f.Limit == 0:
		q.Limit = DefaultListLimit
	case f.Limit < 1 || f.Limit > MaxListLimit:
		return nil, paramError("limit", "limit must be a whole number from 1 to %d", MaxListLimit)
	}
	switch f.Status {
	case "":
	case StatusCompleted, StatusFailed:
		q.Status = storage.ExecutionStatus(f.Status)
	default:
		return nil, paramError("status", "status must be %s or %s", StatusCompleted, StatusFailed)
	}
	if f.Tool != "" {
		q.ToolSlug = g.slugFilter(f.Tool)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		return nil, paramError("until", "until must be later than since")
	}
	binding := listingBinding(scope, q)
	if f.Cursor != "" {
		pos, ok := decodeCursor(f.Cursor, binding)
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
	page := &ExecutionPage{Executions: make([]ExecutionSummary, 0, min(len(list), want))}
	for i, e := range list {
		if i == want {
			last := list[i-1]
			next := encodeCursor(storage.ExecutionPosition{CreatedAt: last.CreatedAt, ID: last.ID}, binding)
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
func (g *Gateway) summarize(e storage.Execution) ExecutionSummary {
	ref := ToolRef{ID: e.ToolID, Slug: e.ToolSlug, Name: e.ToolSlug}
	if v, err := g.registry.Lookup(e.ToolID); err == nil {
		ref = toolRef(v.Tool)
	}
	if ref.Slug == "" {
		ref.Slug, ref.Name = e.ToolID, e.ToolID
	}
	s := ExecutionSummary{
		ID:             e.ID.String(),
		Principal:      e.Principal,
		Tool:           ref,
		ManifestDigest: e.ManifestDigest,
		Status:         Status(e.Status),
		Cost:           Cost{PriceUSD: usd(e.PriceUSD), FeeUSD: usd(e.FeeUSD), TotalUSD: usd(e.AmountUSD), Currency: "USD"},
		CreatedAt:      e.CreatedAt,
		FinishedAt:     e.FinishedAt,
	}
	if e.Approval != "" {
		s.Approval = &ApprovalRecord{Kind: e.Approval}
		if e.GrantID != uuid.Nil {
			s.Approval.GrantID = e.GrantID.String()
		}
	}
	return s
}

// SpendFilter selects what Spend sums. Every field is optional.
type SpendFilter struct {
	// Since and Until bound the window: executions created in [Since,
	// Until). Since defaults to the start of the current UTC month, Until
	// to now.
	Since, Until time.Time
	// GroupBy is storage.SpendByTool (the default) or storage.SpendByDay.
	GroupBy storage.SpendGrouping
}

// SpendSummary is what a caller was charged over a window.
type SpendSummary struct {
	Since    time.Time             `json:"since"`
	Until    time.Time             `json:"until"`
	GroupBy  storage.SpendGrouping `json:"groupBy"`
	TotalUSD string                `json:"totalUsd"`
	Groups   []SpendGroup          `json:"groups"`
}

// SpendGroup is one tool's, or one UTC day's, part of a SpendSummary.
type SpendGroup struct {
	Key      string `json:"key"` // the tool's slug, or the day as YYYY-MM-DD
	TotalUSD string `json:"totalUsd"`
	Count    int64  `json:"count"` // completed executions
}

// Spend sums what the caller was charged over a window, by tool or by UTC
// day: completed executions only, since failed ones are never charged. It
// counts executions still kept (Config.IdempotencyRetention).
func (g *Gateway) Spend(ctx context.Context, principal string, f SpendFilter) (*SpendSummary, error) {
	if err := validPrincipal(principal); err != nil {
		return nil, err
	}
	return g.spend(ctx, []string{principal}, f)
}

// ApproverSpend is Spend for an approver: what every principal the
// approver approves for was charged, together.
func (g *Gateway) ApproverSpend(ctx context.Context, approver string, f SpendFilter) (*SpendSummary, error) {
	principals, err := g.approverScope(ctx, approver)
	if err != nil {
		return nil, err
	}
	return g.spend(ctx, principals, f)
}

func (g *Gateway) spend(ctx context.Context, principals []string, f SpendFilter) (*SpendSummary, error) {
	now := g.clock.Now().UTC()
	if f.GroupBy == "" {
		f.GroupBy = storage.SpendByTool
	}
	if f.GroupBy != storage.SpendByTool && f.GroupBy != storage.SpendByDay {
		return nil, paramError("groupBy", "groupBy must be %s or %s", storage.SpendByTool, storage.SpendByDay)
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
	out := &SpendSummary{Since: f.Since.UTC(), Until: f.Until.UTC(), GroupBy: f.GroupBy, Groups: make([]SpendGroup, len(groups))}
	total := decimal.Zero
	for i, gr := range groups {
		total = total.Add(gr.TotalUSD)
		out.Groups[i] = SpendGroup{Key: gr.Key, TotalUSD: usd(gr.TotalUSD), Count: gr.Count}
	}
	out.TotalUSD = usd(total)
	return out, nil
}

// paramError is invalid_request naming the parameter at fault.
func paramError(param, format string, args ...any) *Error {
	e := newError(CodeInvalidRequest, format, args...)
	e.Parameter = param
	return e
}
