package sealing_test

import (
	"context"
	"fmt"

	"github.com/toolgate/toolgate/sealing"
	"github.com/toolgate/toolgate/storage/memory"
)

// Instances on one store seal and open alike with no key configured: the
// first generates the key and keeps it in the store.
func ExampleFleetKeys() {
	ctx := context.Background()
	store := memory.New()
	one, _ := sealing.FleetKeys(ctx, store, nil)
	other, _ := sealing.FleetKeys(ctx, store, nil)

	state := one.SealString([]byte(`{"tool":"earthquake-search"}`), []byte("principal=alice"))
	opened, err := other.OpenString(state, []byte("principal=alice"))
	fmt.Println(string(opened), err)
	_, err = other.OpenString(state, []byte("principal=bob"))
	fmt.Println(err)
	// Output:
	// {"tool":"earthquake-search"} <nil>
	// sealing: the value cannot be opened
}
