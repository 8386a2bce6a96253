// Package sqlite is a storage.Store kept in one SQLite file, for a gateway
// that must keep its ledger, its Idempotency-Keys and its budgets across
// restarts but has no database server: an agent runtime on one machine, a
// desktop agent, a small team's gateway. It uses modernc.org/sqlite, so it
// needs no cgo and no SQLite library on the machine.
//
// Use the memory store (storage/memory) for tests and demos, where state may
// be lost at every restart; this one for a single machine; storage/postgres
// for gateways on several hosts.
//
// Open creates the file when it is missing (readable by its owner only) and
// creates or upgrades its tables from the migrations embedded in the
// package, in one transaction; a file written by a newer version is refused.
// The file uses write-ahead logging, so reads never wait for a write.
//
// # Writes, and several processes on one file
//
// Every write of a Store goes through one connection, one at a time, in a
// transaction begun with BEGIN IMMEDIATE, which takes the file's write lock
// before the first read. So each storage.Store guarantee holds the way
// PostgreSQL's row locks make it hold there: BeginExecution reads the key,
// the quote and the history limits count, and writes the claim and the
// reservation with no other write in between, in this process or any
// other; an Idempotency-Key runs once, a quote is used once, a budget is
// never overspent.
//
// Several processes on the same machine may open the same file (a second
// gateway, an operator's sqlite3 shell): their writes take turns on the
// file's write lock, each waiting up to Config.BusyTimeout for it, and fail
// with an error that says so after that. The file must be on a local file
// system: SQLite's locks and shared memory do not work over most network
// file systems, and Open refuses a file that cannot use write-ahead
// logging. Gateways on several hosts share a PostgreSQL database instead.
//
// The writes waiting at one moment share one transaction (group commit),
// each in a savepoint of its own, so a burst of calls pays for one disk
// flush rather than one each, and a write that fails rolls back alone. A
// write's caller hears of it only after the commit, which waits for the
// disk (synchronous=FULL): a call reported finished replays after the
// process is killed, and after a power loss too. A caller whose context ends
// before its write has started gets the context's error and the write never
// runs; once started, a write runs to its end.
//
// # A call's rows
//
// An admitted call is one row of executions, which holds its
// Idempotency-Key's claim (fingerprint and lease) and its reservation
// beside the call and, once it finishes, its result: BeginExecution
// inserts it and FinishExecution updates it once. A key's record
// (GetIdempotency) is read from that row, finished when the call no longer
// runs; the reservation's state too, reserved while the call runs or is
// ambiguous, then charged or released. So a quote and its call are three
// writes (the quote, the admission, the finish) that insert three rows
// (the quote, the execution, its receipt) and update five (the quote used,
// the day's and the minute's rollups, the execution finished, the tool's
// usage), and every limit of an admission is measured in one statement.
//
// The ledger (spend_ledger) keeps the history of calls whose executions
// were pruned, for the limits that look back further than results are
// kept: pruning an execution moves its call there, and pruning the
// history takes calls out of either.
//
// # Budgets
//
// A call in budgets (storage.Begin.Budgets) carries them on its execution,
// and the execution's insert counts it in each, in the same write, by
// trigger (0012_budgets.sql): its amount and a call in the budget's row
// for its day and tool (budget_daily), and its row among the budget's
// calls (budget_calls). A release gives the amount back to each, and a
// charge adds the call to each budget's spend summary (budget_spend, per
// day, principal and tool), kept for as long as the ledger whatever
// becomes of the execution. So a budget's spend limit sums at most a row
// per tool and day of its window, its rate per minute counts a minute of
// its calls, and every budget limit of a call is checked in the write
// that admits it: on one file, however many processes share it, no
// budget is ever passed. A call in no budget runs none of this.
//
// # Rules
//
// What the organization's rules (contract section 29) leave in the file
// is two JSON columns (0016_rules.sql): the rules that matched a call
// (storage.Begin.Rules) on its execution, NULL for a call none matched;
// and the approvers an "ask" rule named for an approval request
// (ApprovalRequest.Approvers) on the request, which triggers index by
// approver (approval_request_approvers), so that an approver's listing
// (ApprovalRequestFilter.Approver) finds the requests named for it from
// that index, and the others from the principal index, as before.
//
// # Events
//
// Every event the gateway sends is a row of events (0015_events.sql),
// inserted by the write of its cause, so the two commit together or not at
// all: an approval request and its approval_request.created, a decision
// and its approval_request.decided, an ambiguous finish and its
// execution.ambiguous. A charged finish (or a resolution as completed)
// sums, after its charge and in the same write, each alert's budget window
// from budget_spend, as SpendSummary does, and inserts the alert's event
// when the sum has reached its threshold. An insert that finds its id
// keeps the row as it is, so an event written from two processes is one
// row, sent once. ClaimEvents leases the due events in one write: claims,
// from any process on the file, take turns on the write lock, and none
// leases an event whose lease runs. Delivered and failed events are
// counted in event_counts as their attempts are recorded, so Prune, which
// deletes events delivered before Prune.EventsBefore, lowers no count.
//
// Reads (GetQuote, GetIdempotency, MeasureLimits, Usage, ...) use a small
// pool of read-only connections (Config.ReadConnections) and see every
// write committed before they start.
//
// # Values
//
// Amounts are stored as integers of ten-thousandths of a dollar, the
// four decimals every amount has, and sums stay exact; an amount with more
// decimals is refused rather than rounded. The limits of a caller's own
// spend controls are kept as the decimal text they were given. Instants are
// integers of nanoseconds since 1970 (UTC), so times read back are the
// times written, in UTC; the zero time round-trips, and instants outside
// the years 1678 to 2262 are kept as the nearer end of that span.
//
// Limits are measured as in storage/postgres: from rollups of the calls
// per principal, tool and UTC day or minute, kept exact by triggers on the
// executions and the ledger, and raw rows for at most half a minute, so
// admission costs the same however long a principal's history.
//
// # Retention and size
//
// Nothing is deleted until Prune is called; the gateway's RunRetention
// calls it every minute. The budgets' history goes by day, those before
// the day before Prune.LedgerBefore's UTC date, so no zone's month is cut
// short. An ambiguous execution is kept, with its
// Idempotency-Key and its reservation, until a person resolves it. Prune
// deletes in steps of at most a hundred rows, each its own write, so calls
// never wait long behind it. The pages deleted rows leave are reused by
// later writes, so under sustained traffic the file grows to hold what
// retention keeps (a day of results, a month of ledger) and then stays
// that size, but for receipts: a chain is verified from its start, so
// Prune never deletes them, and a gateway that keeps them grows the file
// by about a KiB per finished call. The file does not shrink by itself
// after a peak (run VACUUM while no gateway has it open, to give the space
// back). The write-ahead log is checkpointed into the file as it grows and
// cut back to 64 MiB after a burst. What the process keeps in memory is bounded by
// SQLite's page cache, about 2 MiB per connection, whatever the file's size.
//
// # Upgrades
//
// Open migrates the file as it finds it, and processes of the new version
// can start beside each other at any time. Two migrations must not have a
// process of an earlier version still open on the file, so stop every
// earlier process before starting the new version across them:
//
//   - 0008_one_row_per_call.sql moved a call's Idempotency-Key record onto
//     its execution; an earlier process finds its table gone and fails
//     every call rather than run a key twice.
//   - 0010_reservation_on_execution.sql moved a call's reservation onto its
//     execution; an earlier process would still write a ledger row per
//     call, which the limits would count twice, so the file refuses that
//     row and the earlier process fails every new call with an error that
//     names the migration.
//
// Either way a call the earlier process had begun is taken over by a
// retry once its lease ends.
//
// 0015_events.sql may have an earlier process open across it: that process
// still claims its budget alerts in alerts_sent and sends them itself,
// while this version writes them as events, so an alert reached during the
// upgrade may be sent twice, under the same webhook-id
// ("budget.threshold:<budget>:<window>:<fraction>:<first day>"), which
// receivers deduplicate on.
//
// Back the file up with SQLite's online backup (the sqlite3 shell's .backup
// command) or by copying it while no process has it open: a copy of the
// file alone, taken while a gateway runs, may miss what is still in its
// write-ahead log.
package sqlite
