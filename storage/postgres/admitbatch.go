package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jackc/pgx/v5"
)

// maxAdmitBatch is the most admissions one batch holds. Every lock a batch
// takes is held until its commit, so a larger batch makes an admission of
// another instance that needs one of its principals or budgets wait
// longer; past a few dozen the round trips and commits saved are few.
const maxAdmitBatch = 32

// admissionKey keeps two admissions of one key out of one batch: the
// second goes in the next, and finds the first's execution (see
// BeginExecution), as it would had it arrived a moment later.
func admissionKey(b toAdmit) string { return b.Principal + "\x00" + b.Key }

// ensurePrincipalLocksSQL creates the admission lock rows of principals
// $1 that do not exist yet, and waits for any being created by a
// concurrent admission; it locks nothing, and lockPrincipalsSQL, the next
// statement, locks them all (see ensureBudgetLocksSQL, its budgets' twin).
const ensurePrincipalLocksSQL = `
	INSERT INTO {schema}.principal_locks (principal)
	SELECT p FROM unnest($1::text[]) AS p ORDER BY p COLLATE "C"
	ON CONFLICT (principal) DO NOTHING`

// lockPrincipalsSQL takes the admission locks of principals $1 until the
// transaction ends, in byte order, writing nothing (FOR NO KEY UPDATE, as
// lockPrincipalSQL does for one). When fewer than $2 rows are there (the
// Store believed a lock row existed that does not: rows are never deleted,
// but an operator may), it fails the statement with a division by zero,
// which fails the batch: each call is then admitted alone, which creates
// its principal's row. No admission runs without its principal's lock.
const lockPrincipalsSQL = `
	SELECT 1 / (count(*) = $2::bigint)::int FROM (
		SELECT FROM {schema}.principal_locks WHERE principal = ANY($1::text[])
		ORDER BY principal COLLATE "C"
		FOR NO KEY UPDATE
	) AS held`

// lockWait is how long a batch waits for any one lock before it gives up
// and its calls go alone (see batchSettings): long enough for the
// admissions and finishes ahead of it, however many instances send them,
// and a fifth of the server's default deadlock_timeout.
const lockWait = 200 * time.Millisecond

// batchSettings is the statement that opens a batch's transaction: it
// commits without waiting for the disk when async, and, when timed, waits
// for no lock longer than lockWait. A batch holds a room of the Store's
// few, and every lock its calls take until it commits: one call waiting
// for a lock held elsewhere (a principal's, by another instance's
// admission) must not hold up the rest, nor two batches that hold what
// the other waits for (rows both update, in different orders) wait for
// the server's deadlock detection, a second by default. A batch that gave
// up wrote nothing, and its calls are sent again one by one, on their
// callers' goroutines, each waiting as long as it takes. "" when there is
// nothing to set.
func (s *Store) batchSettings(async, timed bool) string {
	var set []string
	if async {
		set = append(set, asyncCommit)
	}
	if timed {
		set = append(set, fmt.Sprintf(`set_config('lock_timeout', '%dms', true)`, s.lockWait.Milliseconds()))
	}
	if len(set) == 0 {
		return ""
	}
	return `SELECT ` + strings.Join(set, ", ")
}

// waitedTooLong reports whether err is a batch giving up on a lock
// (lock_timeout) or chosen to break a deadlock: its calls go alone.
func waitedTooLong(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == codeLockNotAvailable || pgErr.Code == codeDeadlockDetected)
}

// runAdmissions is the admissions' batcher.Run: one admission alone as
// admit sends it, several as admitBatch does.
func (s *Store) runAdmissions(ctx context.Context, bs []toAdmit) []admitOutcome {
	if len(bs) == 1 {
		return []admitOutcome{s.admit(ctx, bs[0])}
	}
	return s.admitBatch(ctx, bs)
}

// admitBatch admits several calls in one round trip and one transaction,
// with the outcome of each its own, exactly as if each had been admitted
// alone, one after the other in the batch's order (its principals' byte
// order, and for each principal the order its calls arrived in):
//
//   - the batch first locks every principal of its calls, then every
//     budget they count in, each set in byte order of its ids. Every
//     admission, alone or batched, on any instance, locks principals
//     before budgets and each in that order, so admissions cannot
//     deadlock on their locks, and each call's limits are measured with
//     no admission of its principal or budgets in between but those of
//     the batch before it;
//   - then each call's own admission statement runs, the one admit would
//     send, which sees the writes of the calls before it in the batch: a
//     call over a limit is refused beside the calls within theirs, and a
//     call after it is measured without it;
//   - one admission's refusal (over a limit, quote used, stale reads) is
//     its own answer and writes nothing; the batch commits the others;
//   - a statement that fails (an execution id taken meanwhile by another
//     instance, a lock waited for longer than lockWait, a broken
//     connection) rolls the whole transaction back, and each call is then
//     admitted alone, so that only the call at fault fails.
//
// Two calls with one key never share a batch (admissionKey). The batch
// commits without waiting for the disk unless Config.SynchronousAdmission,
// as an admission alone does: a kill of the gateway or a crash of the
// database leaves each of its calls admitted or absent, together.
func (s *Store) admitBatch(ctx context.Context, bs []toAdmit) []admitOutcome {
	out := make([]admitOutcome, len(bs))
	order := make([]int, len(bs))
	for i := range order {
		order[i] = i
	}
	// By principal: the order finish batches update the same principals'
	// rollup rows in (see finishBatch).
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(bs[a].Principal, bs[b].Principal) })
	var (
		sent       []admission // the admissions sent, in order
		at         []int       // where each one's outcome goes
		principals []string
		locks      []string
	)
	for _, i := range order {
		b := bs[i]
		a, err := s.prepareAdmission(b)
		if err != nil {
			out[i].err = err
			continue
		}
		sent = append(sent, a)
		at = append(at, i)
		principals = append(principals, b.Principal)
		locks = append(locks, a.locks...)
	}
	if len(sent) == 0 {
		return out
	}
	principals = sortedUnique(principals)
	locks = sortedUnique(locks)

	batch := &pgx.Batch{}
	batch.Queue(s.batchSettings(!s.syncAdmission, true))
	if !s.principals.all(principals) {
		batch.Queue(s.sql(ensurePrincipalLocksSQL), principals)
	}
	batch.Queue(s.sql(lockPrincipalsSQL), principals, len(principals))
	if len(locks) > 0 {
		if !s.budgets.all(locks) {
			batch.Queue(s.sql(ensureBudgetLocksSQL), locks)
		}
		batch.Queue(s.sql(lockBudgetsSQL), locks)
	}
	for _, a := range sent {
		batch.Queue(a.sql, a.args...)
	}
	verdicts := make([]admitVerdict, len(sent))
	br := s.pool.SendBatch(ctx, batch)
	var err error
	for range batch.Len() - len(sent) {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	for j := range sent {
		if err != nil {
			break
		}
		err = verdicts[j].scan(br.QueryRow())
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Nothing of the batch was written: each call alone, on its
		// caller's goroutine (see BeginExecution), so that only one at
		// fault fails and one waiting for a lock holds up no other.
		s.batchRetries.Add(1)
		for _, i := range at {
			out[i] = admitOutcome{alone: true}
		}
		return out
	}
	s.principals.add(principals)
	for j, a := range sent {
		// Used or refused, the quote is done with (see admit).
		s.memo.forgetQuote(a.b.QuoteID)
		out[at[j]] = s.admitted(a, verdicts[j])
	}
	return out
}

// sortedUnique returns ids sorted in byte order, each once.
func sortedUnique(ids []string) []string {
	slices.Sort(ids)
	return slices.Compact(ids)
}

// ObserveBatches makes observe hear the size of every batch of admissions
// ("admit"), of finishes ("finish") and of quotes ("quote") this Store
// sends from now on.
func (s *Store) ObserveBatches(observe func(operation string, size int)) {
	s.admissions.Observe(func(n int) { observe("admit", n) })
	s.finishes.Observe(func(n int) { observe("finish", n) })
	s.quotes.Observe(func(n int) { observe("quote", n) })
}

// batchesInFlight is how many batches of admissions, and of finishes, a
// Store sends at once. One would batch the most, but every call would
// then wait for the one batch in flight, however long it waits for a lock
// (up to lockWait); with two, the next calls go on beside it.
const batchesInFlight = 2
