// Package postgres is a storage.Store kept in PostgreSQL through pgx, for
// gateways that run on several processes or hosts.
//
// Open connects and returns a Store that owns its pool; New uses a pool the
// caller already has. Either way the Store first applies its embedded
// migrations to the configured schema (Config.Schema, "public" by default):
// versioned in a schema_migrations table, idempotent, and serialized by an
// advisory lock so that any number of instances may start at once.
//
// Every rule the storage contract makes about concurrency is enforced by the
// database, never by locks in a Go process:
//
//   - an Idempotency-Key runs once: the idempotency record's primary key is
//     (principal, key), and only BeginExecution inserts records, under the
//     principal's admission lock; an abandoned run is taken over by a
//     conditional UPDATE that requires the same fingerprint, an unfinished
//     record and a lease that ended before the caller's clock, and that
//     replaces the lease token, which is what makes the old run's
//     FinishExecution fail with storage.ErrLeaseLost;
//   - a quote is used once: one conditional UPDATE (state open, or already
//     used by this very key);
//   - a budget is never overspent: BeginExecution first locks the
//     principal's row in principal_locks (created on demand), so admissions
//     of one principal measure the spend ledger and write their reservation
//     one after the other, on any process;
//   - usage counters are exact: FinishExecution adds to one of a tool's
//     counter shards in the same statement that finishes the execution, and
//     counts a principal as a new user only when its (tool, principal) row
//     was inserted.
//
// The hot path is short. BeginExecution admits a new key in one round trip
// (the lock and one statement that decides and writes, pipelined in one
// implicit transaction) and FinishExecution is one statement; the reads a
// quote or a call needs first go together in one batch (ReadBatch), with the
// quote a quote stores. Limits are measured from rollups of the ledger kept
// exact by triggers on it, whole UTC days (spend_daily) and whole minutes
// (spend_minute), plus the raw rows of at most half a minute, so admission
// costs the same however long a principal's history and however busy its
// last hour (see limits.go). Usage counters are spread over shards so that finishes of one
// tool do not queue on one row. Quotes alone are committed without waiting
// for the disk (see Store.CreateQuote).
//
// Times that decide anything (leases, limit windows, retention) are the ones
// the caller passes in, never the database clock, so a gateway with a fake
// clock behaves the same on PostgreSQL as in memory. Timestamps are stored
// as timestamptz, which keeps microseconds: times read back are truncated to
// the microsecond and in UTC. Amounts are NUMERIC(20,4) and cross the driver
// as text, so they never pass through a float.
//
// The spend ledger is its own table, keyed by execution, so that executions
// and idempotency records can be pruned after a day while a month of spend
// and call history stays measurable.
package postgres
