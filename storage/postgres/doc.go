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
// # What a quote+call pair costs, and what an operator may tune
//
// A pair is four round trips and ten statements: the quote's reads and its
// insert (one batch), the call's reads (one batch), the admission (the
// principal's lock and the statement that decides and writes, one batch)
// and the finish (one statement). It inserts four rows (quote, idempotency
// record, execution, ledger reservation) and updates seven (each of those
// once, the day and minute rollups, a usage shard). Choices made to keep
// that work down, each without weakening a guarantee:
//
//   - The principal's admission lock is a row lock on an existing row
//     (FOR NO KEY UPDATE), not an update that writes a new row version;
//     processes of an earlier version, which lock by a no-op update, still
//     exclude it, so a rolling upgrade keeps admissions serialized.
//   - A call without an approver's grant is admitted by a statement that
//     does not name approval_requests: a statement pays for every table it
//     names at each execution.
//   - The rollup trigger function has no SET clause (its table names carry
//     the schema instead), which spares a save and restore of the setting
//     on every ledger write.
//   - executions has fillfactor 75, so a finish rewrites its row on the
//     page it was inserted on (a heap-only update, no index entries) even
//     when concurrent admissions fill pages meanwhile.
//   - Statements are prepared once per connection (pgx's statement cache,
//     the default mode) and their plans are generic where that is cheaper
//     (see limitsCTE).
//
// Durability: quotes commit without waiting for their WAL to reach disk
// (see Store.CreateQuote); the admission and the finish commit with the
// session's synchronous_commit, on by default, because each records
// something a caller was or will be told: a reservation, a result. An
// operator may turn it off for the gateway's role (ALTER ROLE ... SET
// synchronous_commit = off) or in the URL (options=-c
// synchronous_commit=off). Measured on two vCPUs with the server beside
// the gateway, that takes a lone caller's pair from about 2.3 ms to 1.9 ms.
// What it risks is confined to a crash of the database server or its host
// (a gateway crash loses nothing either way): the transactions committed
// in the last moments before it, up to three times wal_writer_delay, are
// lost as a whole, so the database stays consistent but may forget that a
// call was admitted (a retry under the same key runs the tool again, and
// the lost reservation no longer counts against the caller's limits) or
// that it finished (a caller holds a result the database no longer has; a
// retry takes over once the lease ends and runs the tool again). Keep it
// on where a double run or an uncounted charge matters.
//
// Pool size: a call holds a connection only for each of its round trips,
// never while the tool's provider runs, so a small pool serves many
// concurrent calls. The server opens pgxpool's default (the larger of 4
// and the number of CPUs) unless the URL sets pool_max_conns. Measured on
// two vCPUs with 32 concurrent callers, a pool of 4 ran about a tenth
// fewer pairs per second than one connection per caller, and cost the
// gateway more CPU per pair waiting its turn; past the number of callers
// in flight at once, more connections buy nothing. Size the pools of a
// fleet together: their sum must stay below the server's max_connections,
// with room for other clients.
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
