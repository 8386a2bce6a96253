// Package budgets is the machinery behind Config.Budgets: the checked tree
// of budgets, who counts in which, and the calendar windows each counts
// over in its time zone. The gateway turns a call's budgets into
// storage.Limits and storage.BudgetDays; the stores count them.
package budgets

import (
	"time"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Tree is the checked configuration of every budget.
type Tree struct {
	nodes []*Node
	byID  map[string]*Node
}

// Node is one budget of a Tree.
type Node struct {
	ID, Name string
	Parent   *Node // nil for a root
	Location *time.Location
	// Limits per window; nil when the window has none.
	Limits        map[toolgatetype.BudgetWindowKind]decimal.Decimal
	RatePerMinute *int
	Tools         map[string]ToolLimits // by slug
	Alerts        []float64             // ascending
	Members       []string
	Claims        map[string]string
	Approvers     []string
}

// ToolLimits are a budget's limits on one tool.
type ToolLimits struct {
	Allowed bool
	Limits  map[toolgatetype.BudgetWindowKind]decimal.Decimal
}

// New checks defs and builds their tree. Its error is one line naming the
// field: "budgets[1].parent: ...".
func New(defs []toolgatetype.BudgetDefinition) (*Tree, error) {
	panic("TODO(issue 42)")
}

// Nodes returns every budget in configuration order.
func (t *Tree) Nodes() []*Node { return t.nodes }

// Get returns the budget with id, nil when there is none.
func (t *Tree) Get(id string) *Node { return t.byID[id] }

// For returns the budgets a caller counts in: those naming the principal
// among Members or whose Claims all match claims, and all their ancestors,
// each once, nearest the principal first.
func (t *Tree) For(principal string, claims map[string][]string) []*Node {
	panic("TODO(issue 42)")
}

// Window returns the calendar window of kind that holds now in the
// budget's time zone: its start, its end (when it resets) and its first
// day as YYYY-MM-DD.
func (n *Node) Window(kind toolgatetype.BudgetWindowKind, now time.Time) (start, end time.Time, fromDay string) {
	panic("TODO(issue 42)")
}

// Day is now's calendar day in the budget's time zone, as YYYY-MM-DD.
func (n *Node) Day(now time.Time) string { return now.In(n.Location).Format(time.DateOnly) }
