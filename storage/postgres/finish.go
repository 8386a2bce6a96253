package postgres

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// usageShards is how many tool_usage_shards rows each tool's counters are
// spread over. A finish holds its shard's row lock until it has committed,
// WAL flush included, so with one row per tool every finish of a popular
// tool waited for the one before. With usageShards rows, concurrent
// finishes rarely meet; Usage sums at most this many rows per tool.
const usageShards = 64

// usageShard picks the shard a finish counts in from its execution id, whose
// last bytes are random for both UUIDv4 and UUIDv7.
func usageShard(id uuid.UUID) int16 {
	return int16(binary.BigEndian.Uint16(id[14:]) % usageShards)
}

// finishSQL records a running execution's outcome in one statement, so in
// one implicit transaction and one round trip:
//
//   - execution: the lease check and the result, in one update of one row.
//     The execution takes its status, response and time only while it is
//     still running under this key and f.LeaseToken holds its lease. A
//     takeover replaces the token by an update of the same row, so exactly
//     one of a late finish and a takeover wins, on any process: the second
//     waits for the first's row lock and then finds its condition false.
//   - released_day, released_minute: the reservation is the execution's
//     (see reservation.go), so charging it or keeping it reserved (an
//     ambiguous execution, counted as a running one's until
//     ResolveExecution) writes nothing more. An outcome that releases it
//     ($9) takes the amount out of the execution's day and minute rollups,
//     as the ledger's update trigger did when the reservation was a ledger
//     row; the lease check above makes it happen once.
//   - new_user, usage: for completed executions, the (tool, principal) insert
//     reports whether this principal is new to the tool, and the shard
//     counts it. Its ON CONFLICT waits for a concurrent insert of the same
//     pair to commit, so a principal is counted once however many finishes
//     race.
//
// It returns how many executions it finished: 0 means nothing was written,
// and finishFailure says why.
//
// $1 principal, $2 key, $3 execution id, $4 lease token, $5 status,
// $6 charged, $7 response, $8 now, $9 whether the outcome releases the
// reservation, $10 usage shard.
//
// finishSealedSQL is the same statement storing the execution's receipt
// (see receipt.go), still one statement and one round trip:
//
//   - chain, first: the chain's lock taken shared if no retry holds it or
//     waits for it (pg_try_advisory_xact_lock_shared, which never waits),
//     receipt $12-1 there with hash $13, the one the receipt was sealed
//     on (seq 1 needs none), and seq $12 not taken yet: a finish sealed on
//     a head another instance has moved on from writes nothing, rather
//     than failing on the primary key, which would fail a whole batch
//     with it (see finishBatch). The primary key still refuses a seq
//     taken by a finish not committed yet. execution
//     writes only when both hold. A retry runs the statement with the lock
//     held exclusive ($16): it skips the try, which would fail whenever
//     another session waits for the lock, even in the session that holds it.
//   - receipt: the receipt, for the execution just finished, inserted
//     after every other row this statement writes has been written (it
//     waits for the counts of released_minute, which waits for
//     released_day, and usage): another finish that
//     took the same seq is then either committed, and the insert fails on
//     the primary key, or waits for this one's commit and fails in turn,
//     never holding a row this one still needs. Any failure rolls the whole
//     statement back.
//
// It returns chain's verdict (false: nothing written, the chain moved) and
// how many receipts, so executions, it wrote. $11 chain key, $12 seq,
// $13 prev, $14 hash, $15 signed receipt, $16 whether the chain's lock is
// held. The execution names the receipt by its seq (receipt_seq): the
// response, $7, is stored without it, which its row keeps.
//
// Each comes in a form for an execution that may count in budgets
// (finishBudgetSQL, finishSealedBudgetSQL), which also settles its amount
// on them (budgetSettleSQL) after the principal's rollups and the usage
// counters; it is the same statement for an execution in none, at the
// cost of the tables it names. A Store runs the form without budgets for
// the calls it admitted in none (see plainCalls).
//
// And each comes in a form for an outcome that keeps the reservation
// (charged, or ambiguous), the usual one, which leaves released_day and
// released_minute out: a statement pays at every run for each table it
// writes, whether or not a row of it is touched (see admitStatement). Its
// execution update also requires $9 false, so that it writes nothing for
// an outcome that releases.
var (
	finishSQL             = finishStatement(false, false, true)
	finishSealedSQL       = finishStatement(true, false, true)
	finishBudgetSQL       = finishStatement(false, true, true)
	finishSealedBudgetSQL = finishStatement(true, true, true)

	finishKeptSQL             = finishStatement(false, false, false)
	finishSealedKeptSQL       = finishStatement(true, false, false)
	finishBudgetKeptSQL       = finishStatement(false, true, false)
	finishSealedBudgetKeptSQL = finishStatement(true, true, false)
)

// finishForms are the finish statements by whether the finish stores a
// receipt, whether the execution may count in budgets and whether its
// outcome releases the reservation.
var finishForms = [2][2][2]string{
	{{finishKeptSQL, finishSQL}, {finishBudgetKeptSQL, finishBudgetSQL}},
	{{finishSealedKeptSQL, finishSealedSQL}, {finishSealedBudgetKeptSQL, finishSealedBudgetSQL}},
}

// finishStatement returns the finish statement, with or without a
// receipt, with or without budgets, and with or without the release of
// the reservation from the principal's rollups.
func finishStatement(sealed, budgets, releases bool) string {
	chain, chainCheck, returning, receipt, result, receiptSeq := "", "", "", "", `
SELECT count(*) FROM execution`, ""
	budgetColumns, settle, settled := "", "", ""
	// written waits for the rollups and usage counters the statement
	// writes, for the writes that must come after them.
	written := `(SELECT count(*) FROM usage) >= 0`
	released, kept := "", `
		AND NOT $9::boolean`
	if releases {
		written = `(SELECT count(*) FROM released_minute) + (SELECT count(*) FROM usage) >= 0`
		released = releaseRollups("execution", "$9::boolean") + ","
		kept = ""
	}
	if budgets {
		budgetColumns = `, budgets, budget_days, tool_slug`
		returning = `
	RETURNING 1`
		settle = budgetSettleSQL("execution", "$9::boolean", "$6::boolean", written)
		settled = `
		AND ` + budgetSettledSQL
	}
	if sealed {
		chain = `chain AS (
	SELECT CASE WHEN $16::boolean THEN true
			ELSE pg_try_advisory_xact_lock_shared(` + fmt.Sprint(receiptLockClass) + `, $11::int4) END
		AND ($12::bigint = 1 OR EXISTS (SELECT FROM {schema}.receipts
			WHERE principal = $1 AND seq = $12::bigint - 1 AND hash = $13::text))
		AND NOT EXISTS (SELECT FROM {schema}.receipts WHERE principal = $1 AND seq = $12::bigint) AS ok
),
`
		chainCheck = `
		AND (SELECT ok FROM chain)`
		receiptSeq = `, receipt_seq = $12::bigint`
		returning = `
	RETURNING 1`
		receipt = `,
receipt AS (
	INSERT INTO {schema}.receipts (principal, seq, execution_id, hash, signed)
	SELECT $1, $12::bigint, $3::uuid, $14::text, $15::bytea FROM execution
	WHERE ` + written + settled + `
	RETURNING 1
)`
		result = `
SELECT (SELECT ok FROM chain), (SELECT count(*) FROM receipt)`
	}
	return `
WITH ` + chain + `execution AS (
	UPDATE {schema}.executions SET status = $5, charged = $6, response = $7, finished_at = $8` + receiptSeq + `
	WHERE id = $3 AND principal = $1 AND idempotency_key = $2 AND lease_token = $4
		AND status = 'running'` + kept + chainCheck + `
	RETURNING tool_id, principal, created_at, amount_usd, counted` + budgetColumns + `
),` + released + `
new_user AS (
	INSERT INTO {schema}.tool_users (tool_id, principal)
	SELECT tool_id, principal FROM execution WHERE $5 = 'completed'
	ON CONFLICT (tool_id, principal) DO NOTHING
	RETURNING 1
),
usage AS (
	INSERT INTO {schema}.tool_usage_shards AS u (tool_id, shard, count, unique_users)
	SELECT tool_id, $10::smallint, 1, (SELECT count(*) FROM new_user) FROM execution WHERE $5 = 'completed'
	ON CONFLICT (tool_id, shard) DO UPDATE
	SET count = u.count + 1, unique_users = u.unique_users + EXCLUDED.unique_users` + returning + `
)` + settle + receipt + result
}

// FinishExecution records a running execution's outcome atomically: the
// execution's status and response (which finish its key's run), the
// reservation charged or released (kept, for an ambiguous one), and for
// completed executions the tool's usage counters. ErrLeaseLost when
// f.LeaseToken no longer holds the lease, ErrNotFound when the execution
// does not exist.
//
// With f.Seal, the execution's receipt is stored by the same statement,
// and the execution names it; the response is stored without it. When the Store remembers the
// principal's chain head that is still one round trip; the principal's
// first sealed finish in this process reads the head first (one more), and
// a finish that finds the chain moved (another instance finished one of
// the principal's calls since) retries under the chain's lock (four more).
// See receipt.go.
//
// Finishes that arrive while another is in flight on this Store go
// together, in one round trip and one transaction that waits for the disk
// once (see finishbatch.go); a lone one is sent at once.
func (s *Store) FinishExecution(ctx context.Context, f storage.Finish) error {
	if err := f.Check(); err != nil {
		return err
	}
	if err := checkEvents(f.Events, f.Alerts); err != nil {
		return err
	}
	out, err := s.finishes.Do(ctx, f)
	if err != nil {
		return err
	}
	switch out.then {
	case finishAgainAlone:
		// Its batch wrote nothing of it: on its own, on this goroutine
		// (see finishBatch), waiting for any lock as long as it takes
		// without holding up other principals' calls (see waiting).
		if out.x.f.Seal == nil {
			return s.finishWaiting(ctx, out.x)
		}
		return s.finishAlone(ctx, out.x, false)
	case explainFinish:
		return s.finishFailure(ctx, f)
	}
	return out.err
}

// finishOutcome is what a finish in a batch came to: done with err, or
// something for its caller to do next, on its own goroutine.
type finishOutcome struct {
	err  error
	then finishNext
	x    finishing
}

type finishNext int

const (
	finishDone finishNext = iota
	// finishAgainAlone: nothing was written; the finish is sent again
	// alone, sealed under its chain's lock.
	finishAgainAlone
	// explainFinish: the finish matched no running execution under its
	// lease; finishFailure says why.
	explainFinish
)

// finishing is a finish with what its statement needs to know beside it.
type finishing struct {
	f storage.Finish
	// releases tells whether the outcome releases the reservation: an
	// ambiguous one keeps it reserved until a person resolves it.
	releases bool
	// budgets tells whether the execution may count in budgets: false
	// only for a call this Store admitted in none (see plainCalls).
	budgets bool
	// outbox is the finish's events and, when charged, its alerts,
	// written after it in its transaction (see sendWithOutbox).
	outbox outboxWrites
}

func (s *Store) finishing(f storage.Finish) finishing {
	x := finishing{
		f:        f,
		releases: !f.Charged && f.Status != storage.ExecutionAmbiguous,
		budgets:  !s.plain.take(f.ExecutionID),
	}
	x.outbox.add(f.ExecutionID, f.LeaseToken, f.Events, f.Alerts, f.Charged)
	return x
}

// statement is x's finish statement: the form for its receipt, its
// budgets and its outcome (see finishSQL).
func (x finishing) statement() string {
	return finishForms[btoi(x.f.Seal != nil)][btoi(x.budgets)][btoi(x.releases)]
}

// args are $1 to $10 of x's statement; a sealed one's follow.
func (x finishing) args() []any {
	f := x.f
	return []any{f.Principal, f.Key, bytesOf(f.ExecutionID), bytesOf(f.LeaseToken), string(f.Status), f.Charged,
		storedResponse(f.Response), f.Now, x.releases, usageShard(f.ExecutionID)}
}

// finishAlone sends one finish in its own round trip. A sealed one is
// sealed on the chain head the Store remembers when remembered is set, and
// otherwise under the chain's lock at once: a finish that a batch sealed
// already is sealed only once more (see writeSealed).
func (s *Store) finishAlone(ctx context.Context, x finishing, remembered bool) error {
	if x.f.Seal != nil {
		return s.finishSealed(ctx, x, remembered)
	}
	var n int
	answer, err := s.sendWithOutbox(ctx, s.pool, s.sql(x.statement()), x.args(), &x.outbox,
		func(row pgx.Row) error { return row.Scan(&n) })
	if err = cmp.Or(answer, err); err != nil {
		return translate(err)
	}
	if n == 1 {
		return nil
	}
	return s.finishFailure(ctx, x.f)
}

// finishTimed sends a finish without a receipt in its own round trip, as
// finishAlone does, but waits for no lock longer than lockWait, and then
// returns the database's error, having written nothing: finishWaiting
// tries again.
func (s *Store) finishTimed(ctx context.Context, x finishing) error {
	// One implicit transaction: the setting lasts until the statement ends.
	batch := &pgx.Batch{}
	batch.Queue(s.batchSettings(false, true))
	batch.Queue(s.sql(x.statement()), x.args()...)
	br := s.pool.SendBatch(ctx, batch)
	var n int
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&n)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return translate(err)
	}
	if n == 1 {
		return nil
	}
	return s.finishFailure(ctx, x.f)
}

// finishWaiting is finishTimed in tries, until one is not refused a lock
// or ctx ends (see waiting). A principal's finishes that wait take turns,
// apart from its admissions: a finish needs no admission lock.
func (s *Store) finishWaiting(ctx context.Context, x finishing) error {
	var err error
	if werr := s.waiting.wait(ctx, "finish\x00"+x.f.Principal, func(ctx context.Context) bool {
		err = s.finishTimed(ctx, x)
		return waitedTooLong(err)
	}); werr != nil {
		return werr
	}
	return err
}

// finishSealed is FinishExecution with a receipt: finishSealedSQL, run by
// writeSealed on a sealed chain head.
func (s *Store) finishSealed(ctx context.Context, x finishing, remembered bool) error {
	f := x.f
	key := s.chainKey(f.Principal)
	wrote, err := s.writeSealed(ctx, f.Principal, f.Seal, remembered,
		func(ctx context.Context, q querier, locked bool, seq int64, prev string, sealed storage.Sealed) (bool, error) {
			hash, signed := receiptArgs(sealed)
			var (
				ok bool
				n  int
			)
			answer, err := s.sendWithOutbox(ctx, q, s.sql(x.statement()), append(x.args(), key, seq, prev, hash, signed, locked),
				&x.outbox, func(row pgx.Row) error { return row.Scan(&ok, &n) })
			err = cmp.Or(answer, err)
			switch {
			case receiptConflict(err):
				return false, errChainMoved
			case err != nil:
				return false, translate(err)
			case !ok:
				return false, errChainMoved
			}
			return n == 1, nil
		})
	if err != nil || wrote {
		return err
	}
	return s.finishFailure(ctx, f)
}

// finishFailure says why finishSQL matched nothing, which is rare enough
// to cost a second round trip. No such execution of this principal under
// this key: ErrNotFound. An execution that still holds this lease but is no
// longer running has nothing consistent to write: ErrNotFound too (the
// finish's lease check includes the status, so only an execution changed
// by hand gets here). Otherwise the lease was taken over or the run already
// finished; either way this run's result is not the one on record.
func (s *Store) finishFailure(ctx context.Context, f storage.Finish) error {
	var stillHeld bool
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT lease_token = $4 AND status = 'running'
		FROM {schema}.executions
		WHERE id = $1 AND principal = $2 AND idempotency_key = $3`),
		bytesOf(f.ExecutionID), f.Principal, f.Key, bytesOf(f.LeaseToken)).Scan(&stillHeld)
	if err != nil {
		return translate(err) // no rows: ErrNotFound
	}
	if stillHeld {
		return storage.ErrNotFound
	}
	return storage.ErrLeaseLost
}
