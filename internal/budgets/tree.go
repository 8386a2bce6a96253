// Package budgets is the machinery behind Config.Budgets: the checked tree
// of budgets, who counts in which, and the calendar windows each counts
// over in its time zone. The gateway turns a call's budgets into
// storage.Limits and storage.BudgetDays; the stores count them.
package budgets

import (
	"time"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/toolgatetype"

	// The zones a budget names must load on a machine (or a container
	// image) with no zoneinfo of its own.
	_ "time/tzdata"
)

// Tree is the checked configuration of every budget.
type Tree struct {
	nodes []*Node
	byID  map[string]*Node
	// byMember are the budgets naming each principal among their Members,
	// in configuration order; claimed are the budgets with Claims. For
	// looks a principal up in the first and walks the second, which is
	// short: the budgets an identity provider's groups join. everyone
	// are the budgets that count every principal.
	byMember map[string][]*Node
	claimed  []*Node
	everyone []*Node
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
	Everyone      bool // counts every principal
	Approvers     []string

	// index is the budget's place in the configuration, which orders
	// budgets found at the same distance from a principal.
	index int
}

// ToolLimits are a budget's limits on one tool.
type ToolLimits struct {
	Allowed bool
	Limits  map[toolgatetype.BudgetWindowKind]decimal.Decimal
}

// Windows are the budget windows in the order a budget's state and its
// violations list them.
var Windows = []toolgatetype.BudgetWindowKind{toolgatetype.BudgetDaily, toolgatetype.BudgetWeekly, toolgatetype.BudgetMonthly}

// New checks defs and builds their tree. Its error is one line naming the
// field: "budgets[1].parent: ...".
func New(defs []toolgatetype.BudgetDefinition) (*Tree, error) {
	t := &Tree{byID: make(map[string]*Node, len(defs)), byMember: map[string][]*Node{}}
	for i, d := range defs {
		n, err := node(i, d)
		if err != nil {
			return nil, err
		}
		if _, dup := t.byID[n.ID]; dup {
			return nil, fieldError(i, "id", "duplicate id %q", n.ID)
		}
		t.byID[n.ID] = n
		t.nodes = append(t.nodes, n)
	}
	for i, d := range defs {
		if d.Parent == "" {
			continue
		}
		p, ok := t.byID[d.Parent]
		if !ok {
			return nil, fieldError(i, "parent", "unknown budget %q", d.Parent)
		}
		t.nodes[i].Parent = p
	}
	if err := t.checkCycles(); err != nil {
		return nil, err
	}
	for _, n := range t.nodes {
		seen := make(map[string]bool, len(n.Members))
		for _, m := range n.Members {
			if !seen[m] {
				seen[m] = true
				t.byMember[m] = append(t.byMember[m], n)
			}
		}
		if len(n.Claims) > 0 {
			t.claimed = append(t.claimed, n)
		}
		if n.Everyone {
			t.everyone = append(t.everyone, n)
		}
	}
	return t, nil
}

// Nodes returns every budget in configuration order.
func (t *Tree) Nodes() []*Node { return t.nodes }

// Get returns the budget with id, nil when there is none.
func (t *Tree) Get(id string) *Node { return t.byID[id] }

// Day is now's calendar day in the budget's time zone, as YYYY-MM-DD.
func (n *Node) Day(now time.Time) string { return now.In(n.Location).Format(time.DateOnly) }

// Index is the budget's place in the configuration (0 for the first).
func (n *Node) Index() int { return n.index }
