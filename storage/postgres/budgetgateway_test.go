package postgres_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/budgettest"
	"github.com/toolgate/toolgate/storage"
)

// TestGatewayBudgets runs the gateway's budget cases on PostgreSQL, one
// fresh schema per case.
func TestGatewayBudgets(t *testing.T) {
	budgettest.Run(t, func(t *testing.T) storage.Store { return newStore(t) })
}
