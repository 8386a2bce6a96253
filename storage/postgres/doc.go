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
//   - an Idempotency-Key runs once: a call's execution row is its key's
//     record (fingerprint, lease, and a status that says whether it is
//     finished), a unique index holds one execution per (principal, key),
//     and only BeginExecution inserts executions, under the principal's
//     admission lock; an abandoned run is taken over by a conditional
//     UPDATE of the execution that requires the same fingerprint, a
//     running status and a lease that ended before the caller's clock, and
//     that replaces the lease token, which is what makes the old run's
//     FinishExecution (one UPDATE of the same row, conditional on the
//     token) fail with storage.ErrLeaseLost;
//   - a quote is used once: one conditional UPDATE (state open, or already
//     used by this very key);
//   - a budget is never overspent: BeginExecution first locks the
//     principal's row in principal_locks (created on demand), so admissions
//     of one principal measure their spend history and write their
//     reservation (the execution itself, see below) one after the other,
//     on any process;
//   - usage counters are exact: FinishExecution adds to one of a tool's
//     counter shards in the same statement that finishes the execution, and
//     counts a principal as a new user only when its (tool, principal) row
//     was inserted.
//   - an ambiguous execution is resolved once: ResolveExecution's one
//     statement changes it only while it is ambiguous, so a concurrent
//     resolution waits for its row lock and then finds it resolved. Until
//     then its reservation stays 'reserved', counted in the rollups and the
//     limits as a running call's is, and Prune keeps its execution, which
//     holds its key and its reservation.
//   - a principal's receipts (storage.Seal) form one gapless chain: the
//     receipt is inserted by the statement that finishes (or resolves) its
//     execution, its primary key (principal, seq) lets one receipt take each
//     seq, and the statement inserts seq n only while receipt n-1 is there
//     with the hash the receipt was sealed on. Receipts are never pruned.
//     A Store remembers each principal's chain head so that it can seal
//     before it sends the finish, and lets its own finishes of a principal
//     take turns; a finish that finds the chain moved by another instance
//     wrote nothing, and retries under the chain's advisory lock (see
//     receipt.go).
//
// The hot path is short. BeginExecution admits a new key in one round trip
// (the lock and one statement that decides and writes, pipelined in one
// implicit transaction) and FinishExecution is one statement, each shared
// with the calls in flight beside it (see Batches below); the reads a
// quote or a call needs first go together in one batch (ReadBatch, and
// AdmitCall for a call), with the quote a quote stores. Limits are measured from rollups of every call's
// reservation, whole UTC days (spend_daily) and whole minutes
// (spend_minute), kept exact by the statements that admit, finish, resolve
// and prune, plus the raw rows of at most half a minute, so admission
// costs the same however long a principal's history and however busy its
// last hour (see limits.go). Usage counters are spread over shards so
// that finishes of one tool do not queue on one row. Only a call's result waits for the disk
// when it commits (see Durability below).
//
// # What a quote+call pair costs, and what an operator may tune
//
// A pair on one instance is three round trips and nine statements: the
// quote's reads and its insert (one batch), the admission (the principal's
// lock and the statement that checks, decides and writes, one batch) and
// the finish (one statement). A call quoted on another instance reads
// first, in one more batch. A pair inserts two rows (quote, execution)
// and updates five (each of those once, the day and minute rollups, a
// usage shard), and waits for the disk once: the execution is also its
// key's record (migration 0014) and its reservation (migration 0015), so
// its lease is checked, its result written and its amount charged or
// released by one update of one row. A finish
// that stores a receipt is still that one statement and round trip once
// the Store knows the principal's chain head (its first in the process
// reads the head, one round trip more), and inserts one row more, the
// receipt. Measured at 32 clients beside the database on two vCPUs, the
// row folded in took 7 to 12% off the server's CPU per pair and 6% off
// its WAL records (BENCHMARKS.md, issue 32). Choices made to keep that
// work down, each without
// weakening a guarantee:
//
//   - A call does not read before its admission on the instance that quoted
//     it (AdmitCall): the Store remembers the quotes it created and the
//     spend controls and standing approval its quote's reads found (see
//     memo), and the admission statement checks, before anything else,
//     that the controls and approval are still the database's. When
//     another instance changed them in between, it admits nothing and
//     AdmitCall has the call decided again on fresh reads; a decision that
//     refuses what memory answered is made again on the database's answer
//     too: the caller is answered exactly as without the memory, and the
//     storage contract knows nothing of it. The memory is bounded and
//     trusted for nothing.
//   - The admission commits without waiting for the disk; the result's
//     commit, which waits, makes it durable (see Durability).
//   - The principal's admission lock is a row lock on an existing row
//     (FOR NO KEY UPDATE), not an update that writes a new row version;
//     processes of an earlier version, which lock by a no-op update, still
//     exclude it, so a rolling upgrade keeps admissions serialized.
//   - A call without an approver's grant is admitted by a statement that
//     does not name approval_requests: a statement pays for every table it
//     names at each execution.
//   - A call's reservation is its execution row (see reservation.go):
//     nothing is inserted to reserve nor updated to charge, and a release
//     is two updates of rollup rows in the finish's statement. The
//     admission counts the call in the day and minute rollups in the
//     statement that inserts the execution, with no trigger: a PL/pgSQL
//     call per admission, which the ledger's insert trigger was, cost the
//     statement 330-345 µs against 275-295 µs at one client (migration
//     0010).
//   - The rollup trigger function, which only the archive's rows still
//     call (Prune deleting them, or an operator writing them), has no SET
//     clause (its table names carry the schema instead), which spares a
//     save and restore of the setting on every call.
//   - executions has fillfactor 75, so a finish rewrites its row on the
//     page it was inserted on (a heap-only update, no index entries) even
//     when concurrent admissions fill pages meanwhile.
//   - Statements are prepared once per connection (pgx's statement cache,
//     the default mode) and their plans are generic where that is cheaper
//     (see limitsCTE).
//
// # Batches: concurrent calls share the database's work
//
// Admissions and finishes that arrive while others are in flight on the
// same Store go to the database together (contract section 27; see
// admitbatch.go and finishbatch.go): one round trip and one transaction
// for the batch, each call's own statement in it, each call's answer its
// own. A lone call is sent at once, never held back for company, and
// costs what it cost before batches (TestGatewayRoundTrips). The batch
// forms while the ones before it are in flight, as River's batch
// completer does: the busier the Store, the larger the batches, and the
// fewer the round trips, commits and waits for the disk per call (a
// finish batch waits once for all its results). toolgate_store_batch_size
// shows the sizes (ObserveBatches).
//
// Why each call keeps its own statement, rather than one statement over
// arrays for the batch: a statement does not see its own writes, and a
// call's limits must count the calls admitted before it in the batch (as
// if admitted one by one, in order) and its receipt must follow the one
// before it in its principal's chain. Each statement in the batch's
// transaction sees the ones before it, so a batch decides exactly what its
// calls alone would have, with the statements, checks and proofs they
// already had. What a batch saves is the work around the statements: the
// round trips, the commits and their waits for the disk, and the wake-ups
// on both sides, which were most of the server's CPU per pair.
//
// A batch of admissions locks every principal of its calls, then every
// budget, each set in byte order, before its first statement; an
// admission alone takes its principal's lock and then its budgets', so no
// two admissions, batched or not, on any instance, wait for each other in
// a cycle. Admission and finish batches both run their calls in their
// principals' byte order, so that they update the principals' rollup rows
// in one order, and a finish batch counts all its completed calls in one
// usage shard (a tool's finishes meet on its shard rows). Rows a batch
// cannot order against every other writer's (a budget's day row, updated
// by admissions and by finishes that release) could still close a cycle
// between two batches; so could a lock held elsewhere keep a batch, and
// the calls behind it, waiting. A batch therefore waits for no lock
// longer than 200 ms (lock_timeout, set for its transaction only), a
// fifth of the server's default deadlock detection. A batch whose
// transaction fails for any reason (that, an execution id or a receipt's
// seq taken meanwhile by another instance, a broken connection) wrote
// nothing, and each of its calls is then sent alone, by its own caller,
// waiting as long as it takes: only a call at fault fails, and only a
// call that must wait waits. A Store keeps two batches of each kind in
// flight, so that one waiting does not hold up the calls arriving behind
// it.
//
// Quotes batch the same way (issue 53; see quotebatch.go): the reads and
// insert of each concurrent quote in one round trip and one transaction,
// after the quote locks of the batch's capped principals, taken in the
// order of their keys (a quote alone takes one). A quote refused by its
// principal's cap of open quotes is that quote's answer, read from its
// statement's row, so it never fails the batch or hides another quote's
// answer; only a statement that fails sends the batch's quotes again one
// by one.
//
// # One caller cannot hold up another
//
// A call that must wait for a lock (its batch gave up on one; its
// principal's row held by another instance, or by any transaction outside
// toolgate) waits as long as it takes, but not on a connection that other
// principals' quotes and calls need (contract section 28; see waiting.go):
//
//   - the waiting calls of one principal take turns in the Store, on no
//     connection: each needs the principal's admission lock, which only
//     one can hold at a time, so the others lose nothing by waiting in
//     the process; while one waits, the principal's new calls join the
//     turns rather than a batch they would hold up;
//   - at most half the pool's connections (at least one) are held by
//     waiting calls at once, whatever their principals: the other half
//     serves quotes, reads and the batches;
//   - each try waits for no lock longer than lockWait (lock_timeout), then
//     lets go of its connection and goes to the back of the queue for one,
//     so that calls of several principals stuck behind held locks share
//     them and a call that is not stuck soon has its turn.
//
// A try that gave up wrote nothing (its transaction rolled back), and the
// try that succeeds runs the statements a call alone always ran, under the
// same locks, so no limit is overspent and no key runs twice. A waiting
// call gives up only when its caller does (its context ends), with nothing
// written. Chosen over a reserve of connections kept for fresh work alone,
// which pgxpool cannot set aside, and over lock_timeout alone, which would
// still let six waiting calls take turns holding every connection. Measured
// (TestWaitingCallsDoNotHoldUpOtherPrincipals, a pool of four): with six
// calls of one principal waiting ten seconds on its row locked outside
// toolgate, another principal's quote and call took what they take
// without them, where the quote had waited nine seconds. Finishes sent
// alone after their batch failed wait the same way (a principal's in turns
// of their own, as they need no admission lock), except those storing a
// receipt, whose principal's sealed writes already take turns (see
// receipt.go).
//
// # Budgets
//
// A call in budgets (storage.Begin.Budgets, migration 0017) is admitted in
// the same one round trip: the batch takes each budget's lock row after
// the principal's, in the order of the budgets' ids, and its admission
// statement measures the budgets' limits beside the principal's, records
// the budgets on the execution and counts the call in each budget's day
// row. Admissions sharing a budget take turns on its row, on any number of
// processes, so no budget is taken over its limit; the fixed order keeps
// admissions of different principals sharing budgets from deadlocking.
// The finish settles the amount on each budget in its one statement. A
// call in no budget runs the statements it ran before budgets, naming
// none of their tables. See budget.go.
//
// # Rules
//
// What the organization's rules (contract section 29) leave in the store
// is two columns (migration 0021): the rules that matched a call
// (storage.Begin.Rules), jsonb on its execution written by its admission
// statement, NULL for a call none matched; and the approvers an "ask"
// rule named for an approval request (ApprovalRequest.Approvers), text[]
// on the request. An approver's listing (ApprovalRequestFilter.Approver)
// finds the requests named for it in a GIN index that holds only requests
// that name approvers, and the others in the principal index, as before.
//
// # The outbox
//
// Every event the gateway sends (storage.Outbox, migration 0020) is a row
// of events, written in the transaction of the change that caused it, so
// that no event is lost between a cause and its delivery and none is
// written for a change that did not happen:
//
//   - An approval request's event (ApprovalRequest.Event) and a decision's
//     (ApprovalDecision.Event) are WITH items of the statement that
//     inserts the request or decides it, selected from its row: no row,
//     no event. AddEvent, for causes that change nothing else, is one
//     insert.
//   - A finish's events (Finish.Events) and, when it charges, its budget
//     alerts (Finish.Alerts) are statements after the finish's own, sent
//     in its round trip: a finish with events is a batch of the finish
//     statement and one to three more, pipelined as one implicit
//     transaction; one without is the one statement it was. A resolution
//     as completed does the same with its alerts. Each of these statements
//     writes only the events of a cause that changed its execution's row
//     in the same transaction, under the lease it finished under (the
//     row's xmin is the transaction's id): a finish whose lease was lost
//     wrote nothing, and writes no event. A failure of any statement rolls
//     back the finish with them.
//   - In a finish batch, the events and alerts of all its finishes follow
//     all its finish statements, in the batch's transaction and round
//     trip, with the same rule per finish; a batch that fails wrote none
//     of them, and each finish sent again alone writes its own.
//   - An alert sums its budget's charged spend over its days after the
//     charge (budget_spend, as SpendSummary sums it) and writes its event
//     when the sum reaches its threshold, with data.usedUsd set to it, in
//     SQL between the bytes storage.WithUsed would put around it, unless
//     an event of its id exists. The sum is a statement after one that
//     takes each budget's alert lock (a transaction-scoped advisory lock):
//     two charges made at once on two instances would each sum without the
//     other's uncommitted one and both miss a threshold they reach
//     together; under the lock, the second to weigh waits for the first to
//     commit and sees its charge. The lock is taken after every row lock
//     of the transaction, by these statements only, so it closes no cycle.
//
// Payloads are stored as their bytes (bytea), the bytes a deliverer
// signs, never respelled: a caller's input may carry an escaped NUL or
// bytes that are not UTF-8 into a payload, which jsonb or text would
// refuse. Ids and types, text, are checked for what PostgreSQL's text
// cannot hold before anything is sent.
//
// A deliverer's claim (ClaimEvents) locks the due events FOR UPDATE SKIP
// LOCKED and leases them in one statement: claims on any number of
// instances pass over each other's events, and one that meets a lease
// just committed re-checks it and passes too. EventAttempted checks the
// lease token and bumps event_counts, the counts EventStats reports and
// pruning never lowers, in the same statement. Prune deletes delivered
// events only.
//
// # Durability
//
// A commit that does not wait for the disk is visible to every session at
// once, like any other, and survives any crash of a gateway: only a crash
// of the database server or its host can lose it, and then it loses the
// transactions committed in the last moments before (up to three times
// wal_writer_delay), as a whole and in order, since the WAL reaches disk
// in order. A commit that waits makes durable everything committed before
// it as well.
//
//   - Quotes never wait (see Store.CreateQuote): a lost quote costs its
//     caller a quote_not_found and a new quote.
//   - A call's admission does not wait, unless Config.SynchronousAdmission
//     (the server's "synchronousAdmission"). Its result waits, so that no
//     caller is told a result the database could lose, and that wait makes
//     the admission durable too. Between the two the provider runs, and
//     only a database crash in that window differs: the admission may be
//     lost, so the call's result cannot be recorded and its caller gets an
//     error, while its provider did run; a retry under the key then runs the
//     tool again, as a retry after a crash mid-call does anyway with the
//     admission kept (it takes over once the lease ends). Nothing is charged
//     twice either way, and no spend the database forgot was ever charged:
//     the lost reservation belonged to a call that never recorded a result.
//     What SynchronousAdmission buys is that such a call can still record
//     its result when the database is back in time, at one more wait for
//     the disk per call.
//   - The result waits with the session's synchronous_commit, on by
//     default. An operator may turn that off too, for the gateway's role
//     (ALTER ROLE ... SET synchronous_commit = off) or in the URL
//     (options=-c synchronous_commit=off); then a database crash may also
//     forget that a call finished: its caller holds a result the database
//     no longer has, and a retry takes over once the lease ends and runs
//     the tool again. Keep it on where a double run matters.
//
// # Pool size
//
// A call holds a connection only for each of its round trips, never while
// the tool's provider runs, so a small pool serves many concurrent calls.
// The server opens pgxpool's default (the larger of 4 and the number of
// CPUs) unless the URL sets pool_max_conns. With the database on the same
// two vCPUs and 32 concurrent callers, a pool of 4 cost the gateway more
// CPU per pair waiting its turn, and the database 40% less (fewer backends
// contending for two CPUs); pairs per second came out within a tenth either
// way, one way on one machine and the other on another. Past the number of
// callers in flight at once, more connections buy nothing. Size the pools
// of a fleet together: their sum must stay below the server's
// max_connections, with room for other clients.
//
// Times that decide anything (leases, limit windows, retention) are the ones
// the caller passes in, never the database clock, so a gateway with a fake
// clock behaves the same on PostgreSQL as in memory. Timestamps are stored
// as timestamptz, which keeps microseconds: times read back are truncated to
// the microsecond and in UTC. Amounts are NUMERIC(20,4) and cross the driver
// as text, so they never pass through a float.
//
// The spend ledger is the archive of executions that Prune deleted (each
// its key's record) while their calls still count: executions can be
// pruned after a day while a month of spend and call history stays
// measurable. Pruning that history (Prune's LedgerBefore) deletes archive
// rows and takes executions not yet pruned out of the rollups; each
// execution says whether its call still counts (counted). See prune.go.
//
// # Upgrading across migration 0014
//
// Migration 0014 moved the idempotency records onto the executions (one row
// per admitted call) and left idempotency_records a read-only view of them.
// Instances of an earlier version cannot run beside it: a rolling upgrade
// across it is not possible. Stop every instance of the earlier version,
// then start this one, which migrates. An earlier instance left running
// fails each admission, finish and takeover with an error naming the view,
// so it can neither run a key twice nor record a result nobody sees; a call
// it admitted before the migration and finishes after is answered with an
// error and stays running until its lease ends, when a retry of its key
// takes it over on an instance of this version.
//
// # Upgrading across migration 0015
//
// Migration 0015 moved each call's reservation from the spend ledger onto
// its execution, and left the ledger the archive of pruned executions. It
// cannot be rolled across either: stop every instance of the earlier
// version, then start this one, which migrates. An earlier instance left
// running would count its calls twice in the limits and fail to release
// what it does not charge, so the database refuses its admissions,
// finishes, resolutions and pruning of executions with an error naming the
// migration; a call it admitted before the migration and finishes after is
// answered with an error and stays running until its lease ends, when a
// retry of its key takes it over on an instance of this version. The
// migration touches no rollup: every limit measures what it measured
// before.
package postgres
