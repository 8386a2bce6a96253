package sqlite_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/budgettest"
	"github.com/toolgate/toolgate/storage"
)

// TestBudgetsBehindTheGateway runs the gateway's budget cases on a new
// file each: what callers and approvers see of budgets kept here.
func TestBudgetsBehindTheGateway(t *testing.T) {
	budgettest.Run(t, func(t *testing.T) storage.Store { return newStore(t) })
}
