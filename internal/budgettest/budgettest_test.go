package budgettest_test

import (
	"testing"

	"github.com/toolgate/toolgate/internal/budgettest"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
)

func TestMemory(t *testing.T) {
	budgettest.Run(t, func(*testing.T) storage.Store { return memory.New() })
}
