package toolgate

import (
	"context"

	"github.com/toolgate/toolgate/storage"
)

// budgetAlerts watches the budgets' windows: it sends one budget.threshold
// event per crossing across the fleet and exports the budget metrics.
type budgetAlerts struct{}

// newBudgetAlerts starts watching g.budgets.
func (g *Gateway) newBudgetAlerts() (*budgetAlerts, error) {
	return &budgetAlerts{}, nil // TODO(issue 42): alerts and metrics
}

// budgetCharged is told of each call charged to budgets (a completed
// finish, or an ambiguous one resolved completed), after the store has it.
// It must not block the call.
func (g *Gateway) budgetCharged(ctx context.Context, charged []storage.BudgetDay) {
	// TODO(issue 42): alerts
}
