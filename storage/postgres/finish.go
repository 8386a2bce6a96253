package postgres

import (
	"context"
	"encoding/binary"

	"github.com/google/uuid"

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
//   - finished: the lease check. The idempotency record is finished only
//     while f.LeaseToken holds it and its execution is still running. A
//     takeover replaces the token under the same row lock, so exactly one
//     of a late finish and a takeover wins, on any process.
//   - execution: status, response and time, for the record just finished.
//   - reservation: charged or released, or for an ambiguous execution
//     ($9 'reserved') left as it is, counted as a running one's until
//     ResolveExecution. Prune keeps the reservations of running executions,
//     so the row is there; the state condition makes a repeated update
//     harmless. (The spend_daily rollups follow by trigger.)
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
// $6 charged, $7 response, $8 now, $9 reservation state, $10 usage shard.
const finishSQL = `
WITH finished AS (
	UPDATE {schema}.idempotency_records i SET finished = true
	FROM {schema}.executions e
	WHERE i.principal = $1 AND i.key = $2 AND i.execution_id = $3 AND i.lease_token = $4
		AND NOT i.finished AND e.id = $3 AND e.status = 'running'
	RETURNING i.execution_id
),
execution AS (
	UPDATE {schema}.executions e SET status = $5, charged = $6, response = $7, finished_at = $8
	FROM finished f WHERE e.id = f.execution_id
	RETURNING e.tool_id, e.principal
),
reservation AS (
	UPDATE {schema}.spend_ledger l SET state = $9
	FROM execution WHERE l.execution_id = $3 AND l.state = 'reserved' AND $9 <> 'reserved'
),
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
	SET count = u.count + 1, unique_users = u.unique_users + EXCLUDED.unique_users
)
SELECT count(*) FROM execution`

// FinishExecution records a running execution's outcome atomically: the
// idempotency record finished, the execution's status and response, the
// reservation charged or released (kept, for an ambiguous one), and for
// completed executions the tool's usage counters. ErrLeaseLost when
// f.LeaseToken no longer holds the lease, ErrNotFound when the execution
// does not exist.
func (s *Store) FinishExecution(ctx context.Context, f storage.Finish) error {
	if err := f.Check(); err != nil {
		return err
	}
	response := f.Response
	if response == nil {
		// A finished execution always has a response, even an empty one;
		// NULL is kept to mean "still running".
		response = []byte{}
	}
	state := ledgerState(f.Charged)
	if f.Status == storage.ExecutionAmbiguous {
		state = "reserved"
	}
	var n int
	if err := s.pool.QueryRow(ctx, s.sql(finishSQL),
		f.Principal, f.Key, bytesOf(f.ExecutionID), bytesOf(f.LeaseToken), string(f.Status), f.Charged, response, f.Now,
		state, usageShard(f.ExecutionID)).Scan(&n); err != nil {
		return translate(err)
	}
	if n == 1 {
		return nil
	}
	return s.finishFailure(ctx, f)
}

// ledgerState is the state a settled reservation takes.
func ledgerState(charged bool) string {
	if charged {
		return "charged"
	}
	return "released"
}

// finishFailure says why finishSQL matched nothing, which is rare enough
// to cost a second round trip. No such execution of this principal under
// this key: ErrNotFound. A record that still holds this lease but whose
// execution is no longer running has nothing consistent to write:
// ErrNotFound too. Otherwise the lease was taken over or the run already
// finished; either way this run's result is not the one on record.
func (s *Store) finishFailure(ctx context.Context, f storage.Finish) error {
	var stillHeld bool
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT i.lease_token = $4 AND NOT i.finished
		FROM {schema}.idempotency_records i JOIN {schema}.executions e ON e.id = i.execution_id
		WHERE i.principal = $2 AND i.key = $3 AND i.execution_id = $1 AND e.principal = $2`),
		bytesOf(f.ExecutionID), f.Principal, f.Key, bytesOf(f.LeaseToken)).Scan(&stillHeld)
	if err != nil {
		return translate(err) // no rows: ErrNotFound
	}
	if stillHeld {
		return storage.ErrNotFound
	}
	return storage.ErrLeaseLost
}
