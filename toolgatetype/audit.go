package toolgatetype

import "time"

// SpendGrouping is what SpendSummary groups by.
type SpendGrouping string

// Spend groupings.
const (
	// SpendByTool groups by the tool's slug.
	SpendByTool SpendGrouping = "tool"
	// SpendByDay groups by the UTC day of creation, as YYYY-MM-DD.
	SpendByDay SpendGrouping = "day"
	// SpendByPrincipal groups by the principal who called (a budget's
	// spend only).
	SpendByPrincipal SpendGrouping = "principal"
)

// Key is the group a completed execution counts in under grouping g.
func (g SpendGrouping) Key(toolSlug string, createdAt time.Time) string {
	if g == SpendByDay {
		return createdAt.UTC().Format(time.DateOnly)
	}
	return toolSlug
}

// Listing limits: a page holds DefaultListLimit items unless asked for
// more, and never more than MaxListLimit.
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
	// Status keeps only completed, failed or ambiguous (unresolved) executions.
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
	// Rules are the organization's rules that took part in admitting the
	// call, audit ones included; absent when none did.
	Rules []RuleUse `json:"rules,omitempty"`
}

// ApprovalRecord is how a call was approved: "digest" (the call named the
// manifest digest), "standing" (the caller's policy covered it, so none was
// needed) or "grant" (an approver's grant, GrantID).
type ApprovalRecord struct {
	Kind    ApprovalKind `json:"kind"`
	GrantID string       `json:"grantId,omitempty"`
}

// SpendFilter selects what Spend sums. Every field is optional.
type SpendFilter struct {
	// Since and Until bound the window: executions created in [Since,
	// Until). Since defaults to the start of the current UTC month, Until
	// to now.
	Since, Until time.Time
	// GroupBy is SpendByTool (the default) or SpendByDay.
	GroupBy SpendGrouping
	// FromDay and ToDay bound a budget's spend (BudgetSpend) by days of
	// the budget's calendar, YYYY-MM-DD: FromDay is the first day counted
	// and ToDay the last, included, so 2026-11-01 to 2026-11-30 is
	// November wherever the budget is. Each takes the place of Since or
	// Until, not beside it. Spend, whose days are UTC's, refuses them.
	FromDay, ToDay string
}

// SpendSummary is what a caller was charged over a window.
type SpendSummary struct {
	Since    time.Time     `json:"since"`
	Until    time.Time     `json:"until"`
	GroupBy  SpendGrouping `json:"groupBy"`
	TotalUSD string        `json:"totalUsd"`
	Groups   []SpendGroup  `json:"groups"`
}

// SpendGroup is one tool's, or one UTC day's, part of a SpendSummary.
type SpendGroup struct {
	Key      string `json:"key"` // the tool's slug, or the day as YYYY-MM-DD
	TotalUSD string `json:"totalUsd"`
	Count    int64  `json:"count"` // completed executions
}
