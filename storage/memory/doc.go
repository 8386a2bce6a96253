// Package memory is an in-process storage.Store for tests, demos and
// single-process deployments that can afford to lose their state on restart.
//
// Every method takes one mutex for a short, bounded piece of work, so the
// atomicity guarantees of storage.Store hold across goroutines of one process
// (and only one process: two gateways with two memory stores share nothing).
// Byte slices and maps are copied on the way in and out, so callers can never
// reach the store's internals.
//
// Listing executions walks one principal's executions, kept in creation
// order, back from a binary search, so a page costs about its own size.
//
// Measuring a limit visits only the caller's own history, through sums kept
// per hour and per day, so a monthly window costs a few dozen additions and
// the rows of one partial hour rather than one addition per call; a call
// limit over all tools counts that partial hour by binary search.
//
// A budget is shared by the principals who count in it, so its history is
// its own: one row per call, summed per calendar day of the budget's time
// zone (the day the gateway gives with the call), so that a monthly budget
// costs at most 31 additions and its spend summary reads those sums. Its
// call limits, a minute long, count the budget's calls by creation time.
//
// # Retention
//
// The store never deletes anything on its own. Quotes, idempotency records,
// executions, approval requests and the spend ledger grow with traffic until
// the gateway calls Prune, and memory stays bounded only if it does so on a
// schedule (for example every minute, with IdempotencyBefore 24 hours ago,
// QuotesBefore and ApprovalRequestsBefore a few minutes ago and LedgerBefore
// the start of the previous UTC month).
// Executions are pruned together with their idempotency record; the ledger of
// spend and calls is kept apart from them so that monthly limits still see
// spend whose execution is long gone. An ambiguous execution not yet
// resolved is kept, with its record and its ledger row, however old: its
// reservation is a person's to settle. Prune walks each kind in time order and
// stops after Limit deletions, so its cost is proportional to what it deletes,
// not to the size of the store. A budget's history goes by its days, those
// before the day ahead of LedgerBefore's UTC date (a zone ahead of UTC
// begins its month early), and shares the ledger's Limit; claimed alerts
// go once claimed before LedgerBefore.
//
// Usage counters, unique-user sets, standing approvals and spend controls are
// never pruned: they are small per principal and tool and meant to last.
// Go maps do not return their buckets to the allocator when entries are
// deleted, so after a traffic peak the process keeps roughly the peak's map
// capacity even though pruned entries are gone.
package memory
