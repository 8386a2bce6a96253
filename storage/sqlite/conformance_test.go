package sqlite_test

import (
	"testing"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/storagetest"
)

// TestConformance runs the shared storage suite, one new file per subtest.
func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return newStore(t) })
}
