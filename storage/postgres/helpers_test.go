package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
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

// testURL returns the server to test against. Without one the tests and
// benchmarks skip, except in CI, where a silently skipped backend would look
// green.
func testURL(t testing.TB) string {
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

// atExit holds what must outlive one test or benchmark run but not the
// process, such as a benchmark's loaded schema reused by every b.N and
// -count; TestMain runs it last-added first.
var atExit struct {
	mu  sync.Mutex
	fns []func()
}

func onExit(f func()) {
	atExit.mu.Lock()
	defer atExit.mu.Unlock()
	atExit.fns = append(atExit.fns, f)
}

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(atExit.fns) - 1; i >= 0; i-- {
		atExit.fns[i]()
	}
	if shared.pool != nil {
		shared.pool.Close()
	}
	os.Exit(code)
}

func sharedPool(t testing.TB) *pgxpool.Pool {
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
func newSchema(t testing.TB) string {
	t.Helper()
	return schemaForTest(t, true)
}

// schemaForTest returns a random schema name that is dropped when the test
// ends, and creates the schema when create is set.
func schemaForTest(t testing.TB, create bool) string {
	t.Helper()
	schema, drop := makeSchema(t, "toolgate_test_", create)
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return schema
}

// makeSchema returns a random schema name with prefix, creating the schema
// when create is set, and the function that drops it with everything in it.
// The drop uses a connection of its own and a context of its own: it may run
// after the test's context is cancelled, or after every test has ended.
func makeSchema(t testing.TB, prefix string, create bool) (string, func() error) {
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
	schema := prefix + hex.EncodeToString(b[:])
	if create {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatalf("create schema: %v", err)
		}
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return fmt.Errorf("drop schema %s: %w", schema, err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			return fmt.Errorf("drop schema %s: %w", schema, err)
		}
		return nil
	}
	return schema, drop
}

// newStore returns a Store over a fresh schema on the shared pool.
func newStore(t testing.TB) *postgres.Store {
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
func openInstance(t testing.TB, schema string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), testURL(t), &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// pruneAll is the most rows of each kind one Prune of these tests deletes:
// the gateway's batch, more than any test stores. A store is handed
// complete parameters, so a test says how many too.
const pruneAll = 1000
