package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// earlierLockSQL is how versions before migration 0009 took a principal's
// admission lock: a no-op update of its row, on every admission.
const earlierLockSQL = `
	INSERT INTO {schema}.principal_locks AS p (principal) VALUES ($1)
	ON CONFLICT (principal) DO UPDATE SET principal = p.principal`

// The admission lock now only locks an existing row, where earlier
// versions rewrote it. During a rolling upgrade both run against one
// schema, and a budget holds only if each form waits for the other: an
// admission waits while an earlier process holds the principal's lock, and
// an earlier process waits while an admission's lock is held.
func TestAdmissionLockExcludesEarlierVersions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := newSchema(t)
	s := openInstance(t, schema)
	earlier := fmtSchema(earlierLockSQL, schema)
	xminSQL := fmtSchema(`SELECT xmin::text FROM {schema}.principal_locks WHERE principal = $1`, schema)

	// A first admission creates alice's row.
	first := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, first))
	_, err := s.BeginExecution(ctx, testBegin(first, "first", t0))
	require.NoError(t, err)

	// An earlier version's process holds alice's lock in an open
	// transaction: this version's admission of alice waits for it.
	old, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = old.Rollback(ctx) }()
	_, err = old.Exec(ctx, earlier, "alice")
	require.NoError(t, err)
	// The earlier form wrote a new version of the row, stamped with its
	// transaction.
	var oldVersion string
	require.NoError(t, old.QueryRow(ctx, xminSQL, "alice").Scan(&oldVersion))

	second := testQuote("alice", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, second))
	admitted := make(chan error, 1)
	go func() {
		_, err := s.BeginExecution(ctx, testBegin(second, "second", t0))
		admitted <- err
	}()
	select {
	case err := <-admitted:
		t.Fatalf("admitted while an earlier version held the principal's lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	// Another principal is not held up.
	bobs := testQuote("bob", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, bobs))
	_, err = s.BeginExecution(ctx, testBegin(bobs, "bob-1", t0))
	require.NoError(t, err)

	require.NoError(t, old.Commit(ctx))
	select {
	case err := <-admitted:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the admission did not go on once the earlier version's lock was released")
	}
	// This version's admission locked the row without writing a version of
	// its own: the row is still the one the earlier form wrote.
	var version string
	require.NoError(t, sharedPool(t).QueryRow(ctx, xminSQL, "alice").Scan(&version))
	assert.Equal(t, oldVersion, version, "the admission lock rewrote the principal's row")

	// The other way round: while this version's lock is held, an earlier
	// version's lock statement cannot take the row.
	held, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = held.Rollback(ctx) }()
	_, err = held.Exec(ctx, s.LockPrincipalSQL(), "alice")
	require.NoError(t, err)

	waiter, err := sharedPool(t).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = waiter.Rollback(ctx) }()
	_, err = waiter.Exec(ctx, `SET LOCAL lock_timeout = '200ms'`)
	require.NoError(t, err)
	_, err = waiter.Exec(ctx, earlier, "alice")
	var pgErr *pgconn.PgError
	require.True(t, errors.As(err, &pgErr), "an earlier version's lock was taken while this version's was held: %v", err)
	assert.Equal(t, "55P03", pgErr.Code, "lock_not_available: it waited for the lock until its timeout")
}

// fmtSchema qualifies query's {schema} names, as the Store does.
func fmtSchema(query, schema string) string {
	return strings.ReplaceAll(query, "{schema}", pgx.Identifier{schema}.Sanitize())
}
