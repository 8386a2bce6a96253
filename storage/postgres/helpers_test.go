package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolgate/toolgate/storage/postgres"
)

// urlEnv names the variable that points the tests at a PostgreSQL server.
const urlEnv = "TOOLGATE_TEST_POSTGRES_URL"

// testURL returns the server to test against. Without one the tests skip,
// except in CI, where a silently skipped backend would look green.
func testURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv(urlEnv)
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the PostgreSQL tests (.ci/postgres.sh sets it)", urlEnv)
		}
		t.Skipf("%s is not set; skipping PostgreSQL tests "+
			"(e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", urlEnv, urlEnv)
	}
	return url
}

// shared is one pool for every store the conformance suite makes: its
// subtests run in parallel and each wants a store, and one pool per store
// would hold more connections than a default server allows. Stores over
// different schemas can share a pool because the Store qualifies every name.
var shared struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.pool != nil {
		shared.pool.Close()
	}
	os.Exit(code)
}

func sharedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	url := testURL(t)
	shared.once.Do(func() {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			shared.err = err
			return
		}
		cfg.MaxConns = 16
		shared.pool, shared.err = pgxpool.NewWithConfig(context.Background(), cfg)
	})
	if shared.err != nil {
		t.Fatalf("shared pool for %s: %v", urlEnv, shared.err)
	}
	return shared.pool
}

// newSchema creates a schema with a random name for one test and drops it,
// with everything in it, when the test ends. An unreachable server fails
// the test: whoever set the variable meant the tests to run.
func newSchema(t *testing.T) string {
	t.Helper()
	return schemaForTest(t, true)
}

// schemaForTest returns a random schema name that is dropped when the test
// ends, and creates the schema when create is set.
func schemaForTest(t *testing.T, create bool) string {
	t.Helper()
	url := testURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to the server in %s: %v", urlEnv, err)
	}
	defer conn.Close(ctx)

	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "toolgate_test_" + hex.EncodeToString(b[:])
	if create {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatalf("create schema: %v", err)
		}
	}
	t.Cleanup(func() {
		// t.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// newStore returns a Store over a fresh schema on the shared pool.
func newStore(t *testing.T) *postgres.Store {
	t.Helper()
	schema := newSchema(t)
	s, err := postgres.New(t.Context(), sharedPool(t), &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// openInstance returns a Store with a pool of its own over schema, as a
// second gateway process would have. It is closed before the schema is
// dropped (cleanups run last-registered first).
func openInstance(t *testing.T, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), testURL(t), &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}
