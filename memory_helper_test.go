package toolgate_test

import (
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
)

func newMemoryStore() storage.Store { return memory.New() }
