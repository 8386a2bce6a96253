package toolgatetype

import (
	"time"

	"github.com/shopspring/decimal"
)

// BudgetDefinition is one budget as an operator configures it
// (Config.Budgets, the server's "budgets"): a ceiling on what a team or the
// whole organization spends, shared by its members, across every gateway on
// one store. Budgets form a tree by Parent: a call counts in each budget its
// principal belongs to and in all their ancestors.
type BudgetDefinition struct {
	// ID names the budget in metrics, webhooks and the API: 1 to 64
	// characters of a-z, 0-9, "-" and "_".
	ID string `json:"id"`
	// Name is what people read ("Search team"); the ID when empty.
	Name string `json:"name,omitempty"`
	// Parent is the id of the budget this one counts in too; "" for a root.
	Parent string `json:"parent,omitempty"`
	// Members are principal ids whose calls count in the budget.
	Members []string `json:"members,omitempty"`
	// Claims add every caller whose access token carries each of these
	// claims: a string claim equal to the value, or an array claim holding
	// it, exactly. Several claims must all match. API keys join by Members
	// only.
	Claims map[string]string `json:"claims,omitempty"`
	// Everyone makes the budget count every principal, API keys and
	// tokens alike, so that an organization's ceiling has no hole for a
	// token whose claims match no team. It names no Members or Claims (a
	// budget with them is refused: everyone is already in it).
	Everyone bool `json:"everyone,omitempty"`
	// Limits per calendar day, ISO week (from Monday) and month in TimeZone;
	// nil means none. At least one of them, RateLimitPerMinute or a tool's
	// limit must be set.
	DailyLimitUSD   *decimal.Decimal `json:"dailyLimitUsd,omitempty"`
	WeeklyLimitUSD  *decimal.Decimal `json:"weeklyLimitUsd,omitempty"`
	MonthlyLimitUSD *decimal.Decimal `json:"monthlyLimitUsd,omitempty"`
	// RateLimitPerMinute caps the calls all members together make in any
	// 60 seconds; nil means none.
	RateLimitPerMinute *int `json:"rateLimitPerMinute,omitempty"`
	// Tools are limits on single tools, keyed by slug.
	Tools map[string]BudgetToolLimits `json:"tools,omitempty"`
	// Alerts are the fractions of a window's limit, each in (0, 1], whose
	// crossing sends one budget.threshold event.
	Alerts []float64 `json:"alerts,omitempty"`
	// TimeZone is the IANA zone whose calendar the windows follow; "" is UTC.
	TimeZone string `json:"timeZone,omitempty"`
	// Approvers may see the budget and its descendants (GET /v1/budgets,
	// the Spend page), and approve for their members: they see and decide
	// the approval requests of every principal counted in them, token
	// subjects joined by Claims included.
	Approvers []string `json:"approvers,omitempty"`
}

// BudgetToolLimits are a budget's limits on one tool. Allowed false blocks
// the tool for every member.
type BudgetToolLimits struct {
	Allowed         *bool            `json:"allowed,omitempty"`
	DailyLimitUSD   *decimal.Decimal `json:"dailyLimitUsd,omitempty"`
	WeeklyLimitUSD  *decimal.Decimal `json:"weeklyLimitUsd,omitempty"`
	MonthlyLimitUSD *decimal.Decimal `json:"monthlyLimitUsd,omitempty"`
}

// BudgetWindowKind names a budget's calendar window.
type BudgetWindowKind string

// Budget windows.
const (
	BudgetDaily   BudgetWindowKind = "daily"
	BudgetWeekly  BudgetWindowKind = "weekly"
	BudgetMonthly BudgetWindowKind = "monthly"
)

// Budget is a budget's state: each window that has a limit, with what is
// used (charged calls plus amounts held by calls in flight or ambiguous)
// and when it resets. It is an element of GET /v1/budgets and of a quote's
// controls.budgets.
type Budget struct {
	ID     string  `json:"id"`
	Name   string  `json:"name"`
	Parent *string `json:"parent"`
	// TimeZone is the IANA zone whose calendar the windows and the spend's
	// days follow: "UTC" when the budget names none.
	TimeZone string                            `json:"timeZone"`
	Windows  map[BudgetWindowKind]BudgetWindow `json:"windows"`
}

// BudgetWindow is one window of a Budget.
type BudgetWindow struct {
	LimitUSD     string    `json:"limitUsd"`
	UsedUSD      string    `json:"usedUsd"`
	RemainingUSD string    `json:"remainingUsd"`
	ResetsAt     time.Time `json:"resetsAt"`
}

// BudgetRefusal says which budget refused a call (error.budget of
// spend_limit_exceeded): the first one short, nearest the principal.
type BudgetRefusal struct {
	ID     string           `json:"id"`
	Window BudgetWindowKind `json:"window"`
	// Tool is the tool's slug when the window is one of the budget's
	// limits on that tool; empty otherwise.
	Tool         string    `json:"tool,omitempty"`
	LimitUSD     string    `json:"limitUsd"`
	UsedUSD      string    `json:"usedUsd"`
	RequestedUSD string    `json:"requestedUsd"`
	ResetsAt     time.Time `json:"resetsAt"`
}

// BudgetThreshold is the data of a budget.threshold event: a window's
// charged use reached a fraction of its limit.
type BudgetThreshold struct {
	Budget      BudgetRef        `json:"budget"`
	Window      BudgetWindowKind `json:"window"`
	Fraction    float64          `json:"fraction"`
	UsedUSD     string           `json:"usedUsd"`
	LimitUSD    string           `json:"limitUsd"`
	PeriodStart time.Time        `json:"periodStart"`
	ResetsAt    time.Time        `json:"resetsAt"`
}

// BudgetLimitReached is the data of a budget.limit_reached event: a call
// was first refused because a window of the budget was short.
type BudgetLimitReached struct {
	Budget       BudgetRef        `json:"budget"`
	Window       BudgetWindowKind `json:"window"`
	UsedUSD      string           `json:"usedUsd"`
	LimitUSD     string           `json:"limitUsd"`
	RequestedUSD string           `json:"requestedUsd"`
	// PeriodStart is the first day of the window's period, YYYY-MM-DD in
	// the budget's time zone, as in the event's id.
	PeriodStart string    `json:"periodStart"`
	ResetsAt    time.Time `json:"resetsAt"`
}

// BudgetRef names a budget.
type BudgetRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// BudgetList is the body of GET /v1/budgets.
type BudgetList struct {
	Budgets []Budget `json:"budgets"`
}
