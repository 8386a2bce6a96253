package postgres_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/storage/postgres"
)

// Open is the short way: the Store owns its pool and Close releases it.
// (No Output: examples run without a database.)
func ExampleOpen() {
	ctx := context.Background()
	store, err := postgres.Open(ctx, "postgres://toolgate@db.internal:5432/toolgate", &postgres.Config{Schema: "toolgate"})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	// Pass store to the gateway as its storage.Store.
}

// New shares a pool the application already has; the tables live in the
// default schema, public.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://toolgate@db.internal:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := postgres.New(ctx, pool, nil)
	if err != nil {
		log.Fatal(err)
	}
	_ = store
}
