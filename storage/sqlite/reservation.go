package sqlite

// An admitted call's reservation is no row of its own: it is read off the
// call's execution (0010_reservation_on_execution.sql), so admitting a call
// inserts one row and finishing it updates one. The reservation is
// 'reserved' while the execution is running or ambiguous (nobody knows yet
// whether the upstream billed it), 'charged' once charged, and 'released'
// otherwise.
//
// Limits count the reservations of two kinds of rows that never overlap:
// executions with counted set, and spend_ledger rows, which now only
// archive the calls whose executions were pruned (after a day) while
// their calls still count (for a month). The rollups count both, kept by
// triggers on each table; what the code reads raw is at most half a
// minute of each (see limits.go).

// spendsSQL is true for an execution whose amount counts as spend:
// reserved or charged, that is, not released. It is written against the
// executions table's own column names, for a query that reads them
// unqualified.
const spendsSQL = `(status IN ('running', 'ambiguous') OR charged = 1)`
