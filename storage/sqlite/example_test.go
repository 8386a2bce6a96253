package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// A gateway on a SQLite file keeps its calls across a restart: the same
// Idempotency-Key, retried after the file is opened again, gets the stored
// answer instead of a second run.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "toolgate-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "toolgate.db")

	reg := registry.New()
	if err := reg.Register(tools.EarthquakeSearch()); err != nil {
		log.Fatal(err)
	}
	gateway := func(store *sqlite.Store) *toolgate.Gateway {
		// recorded.Transport answers from recorded provider responses,
		// so the example needs no network.
		gw, err := toolgate.New(store, &toolgate.Config{Registry: reg, Transport: recorded.Transport()})
		if err != nil {
			log.Fatal(err)
		}
		return gw
	}

	store, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		log.Fatal(err)
	}
	gw := gateway(store)
	q, err := gw.Quote(ctx, "alice", "earthquake-search")
	if err != nil {
		log.Fatal(err)
	}
	call := toolgatetype.CallRequest{
		Tool: "earthquake-search", QuoteID: q.Quote.ID, Input: []byte(`{"starttime":"2024-09-25"}`),
		ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: "order-42",
	}
	first, err := gw.Call(ctx, "alice", call)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first call:", first.Execution.Status)
	if err := store.Close(); err != nil { // as a restart would
		log.Fatal(err)
	}

	store, err = sqlite.Open(ctx, path, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	again, err := gateway(store).Call(ctx, "alice", call)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after reopening: replayed", again.Replayed, "- same answer", string(again.Body) == string(first.Body))
	// Output:
	// first call: completed
	// after reopening: replayed true - same answer true
}
