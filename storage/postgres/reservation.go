package postgres

// A call's reservation is not a row of its own (migration 0015): it is read
// from the call's execution, which a pair inserts and updates anyway, so
// reserving, charging and releasing cost no row of their own. Its state:
//
//   - 'reserved' while the execution is 'running' or 'ambiguous': its
//     amount counts in the limits until the call, or a person, settles it;
//   - 'charged' when the execution is charged;
//   - 'released' otherwise: the call counts, its amount does not.
//
// The history that limits measure is the rollups, spend_daily and
// spend_minute, as before: the admission adds a call and its amount to its
// day's and its minute's row, a finish or resolution that releases takes
// the amount out again, in the statement that writes the execution. The
// raw rows that limits read for part of a minute are the executions that
// still count (counted), and the archive: spend_ledger, which holds what
// Prune kept of executions it deleted. An execution stops counting when
// Prune takes it out of the rollups with the rest of old history; a row of
// the archive, when Prune deletes it. Either way a call is in the rollups
// exactly while one of its rows is read as counting (see prune.go).

// executionHoldsSpendSQL is true for an execution e whose amount counts as
// spend: reserved or charged, not released.
const executionHoldsSpendSQL = `(e.charged OR e.status IN ('running', 'ambiguous'))`

// executionReservationStateSQL is the state of execution e's reservation,
// as the archive stores it.
const executionReservationStateSQL = `CASE WHEN e.status IN ('running', 'ambiguous') THEN 'reserved'
		WHEN e.charged THEN 'charged' ELSE 'released' END`

// releaseRollups returns the WITH items that take a released amount out of
// the rollups: released_day, then released_minute. source names a relation
// of the released execution with its principal, tool_id, created_at,
// amount_usd and counted; releases is the condition under which the
// outcome releases. An execution that no longer counts is in no rollup, so
// it is left alone. A rollup row that is missing is left missing, and
// nothing goes below zero: the row counts the amount while its execution
// counts. Only the spend moves; the call still counts.
//
// The day's row is updated before the minute's, which waits for it (the
// count), so a finish or resolution locks the rollup rows of one call in
// the order admissions and Prune do (see pruneLedger): no deadlock.
func releaseRollups(source, releases string) string {
	return `
released_day AS (
	UPDATE {schema}.spend_daily d SET spend_usd = d.spend_usd - x.amount_usd
	FROM ` + source + ` x
	WHERE ` + releases + ` AND x.counted AND d.principal = x.principal
		AND d.day = (x.created_at AT TIME ZONE 'UTC')::date AND d.tool_id = x.tool_id
	RETURNING 1
),
released_minute AS (
	UPDATE {schema}.spend_minute m SET spend_usd = m.spend_usd - x.amount_usd
	FROM ` + source + ` x
	WHERE ` + releases + ` AND x.counted AND m.principal = x.principal
		AND m.minute = date_trunc('minute', x.created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
		AND m.tool_id = x.tool_id
		AND (SELECT count(*) FROM released_day) >= 0
	RETURNING 1
)`
}
