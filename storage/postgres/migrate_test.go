package postgres_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage/postgres"
)

// wantTables is every table the migrations create.
var wantTables = []string{
	"alerts_sent", "ambiguous_waiting", "approval_requests", "approvals", "approver_sessions", "budget_daily", "budget_locks", "budget_minute", "budget_spend", "event_counts", "event_windows", "events", "executions", "idempotency_records", "principal_locks", "quotes",
	"receipts", "schema_migrations", "secrets", "spend_controls", "spend_daily", "spend_ledger", "spend_minute", "tool_usage", "tool_usage_shards", "tool_users",
}

// assertOneSetOfTables checks that schema holds exactly the toolgate tables
// and each migration is recorded once.
func assertOneSetOfTables(t *testing.T, schema string) {
	t.Helper()
	pool := sharedPool(t)
	rows, err := pool.Query(t.Context(), `
		SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = $1 ORDER BY table_name COLLATE "C"`, schema)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, wantTables, tables)

	rows, err = pool.Query(t.Context(),
		`SELECT version FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` ORDER BY version`)
	require.NoError(t, err)
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	assert.Equal(t, shippedMigrations(t), versions, "each migration recorded exactly once")
}

// shippedMigrations are the versions of the migration files, in order.
func shippedMigrations(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("migrations")
	require.NoError(t, err)
	var out []int
	for _, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		require.NoError(t, err, e.Name())
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func TestMigrationsAreIdempotent(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	for range 3 {
		s, err := postgres.New(t.Context(), sharedPool(t), &postgres.Config{Schema: schema})
		require.NoError(t, err)
		s.Close()
	}
	assertOneSetOfTables(t, schema)
}

// Two gateways starting at once on a schema that does not exist yet: both
// must come up, and the schema must hold one set of tables.
func TestMigrationsConcurrentStart(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	schema := schemaForTest(t, false)
	const instances = 2
	var (
		wg   sync.WaitGroup
		errs = make([]error, instances)
	)
	start := make(chan struct{})
	for i := range instances {
		wg.Go(func() {
			<-start
			s, err := postgres.Open(t.Context(), url, &postgres.Config{Schema: schema})
			errs[i] = err
			if err == nil {
				s.Close()
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "instance %d", i)
	}
	assertOneSetOfTables(t, schema)
}

// Stores in two schemas of one database, here even on one pool, see
// nothing of each other.
func TestSchemasAreIsolated(t *testing.T) {
	t.Parallel()
	a, b := newStore(t), newStore(t)
	q := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, a.CreateQuote(t.Context(), q))

	_, err := b.GetQuote(t.Context(), q.ID)
	assert.ErrorIs(t, err, errNotFound)
	require.NoError(t, b.CreateQuote(t.Context(), q), "the same id is free in the other schema")
}

// A gateway whose role may use the tables but not create anything (the
// operator migrated with another role) must still start: with nothing to
// migrate, New must not run any DDL.
func TestStartWithoutCreatePrivilege(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	admin := sharedPool(t)
	_, err := postgres.New(ctx, admin, &postgres.Config{Schema: schema})
	require.NoError(t, err)

	role := schema + "_app"
	ident := pgx.Identifier{role}.Sanitize()
	qschema := pgx.Identifier{schema}.Sanitize()
	for _, stmt := range []string{
		`CREATE ROLE ` + ident + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + qschema + ` TO ` + ident,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + qschema + ` TO ` + ident,
	} {
		_, err := admin.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = admin.Exec(ctx, `DROP OWNED BY `+ident)
		if _, err := admin.Exec(ctx, `DROP ROLE `+ident); err != nil {
			t.Errorf("drop role: %v", err)
		}
	})

	cfg, err := pgxpool.ParseConfig(testURL(t))
	require.NoError(t, err)
	cfg.ConnConfig.User = role
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	var canCreate bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT has_schema_privilege($1, 'CREATE')`, schema).Scan(&canCreate))
	require.False(t, canCreate, "the test needs a role without CREATE")

	s, err := postgres.New(ctx, pool, &postgres.Config{Schema: schema})
	require.NoError(t, err)
	q := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, q))
	_, err = s.BeginExecution(ctx, testBegin(q, "k", t0))
	require.NoError(t, err)
}
