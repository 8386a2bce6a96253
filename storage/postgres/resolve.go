package postgres

import (
	"context"
	"errors"

	"github.com/toolgate/toolgate/storage"
)

// resolveSQL resolves an ambiguous execution in one statement, so in one
// implicit transaction and one round trip:
//
//   - resolved: the execution's status, charged flag, response (kept once,
//     on the execution, which a replay of its key reads) and resolution,
//     only while it is ambiguous. A concurrent resolution waits for this
//     one's row lock and then finds the row no longer ambiguous, so exactly
//     one of them writes, on any process.
//   - reservation: charged or released. Prune keeps the reservations of
//     unresolved executions, so the row is there. (A release takes the
//     amount out of the rollups by trigger.)
//   - new_user, usage: for completed, the tool's usage counters, as
//     finishSQL counts them.
//
// It returns the execution as resolved, or no row when nothing was written;
// resolveFailure says why.
//
// $1 execution id, $2 outcome, $3 charged, $4 response, $5 resolved by,
// $6 resolved at, $7 note, $8 reservation state, $9 usage shard.
const resolveSQL = `
WITH resolved AS (
	UPDATE {schema}.executions SET status = $2, charged = $3, response = $4,
		resolution_outcome = $2, resolved_by = $5, resolved_at = $6, resolution_note = $7
	WHERE id = $1 AND status = 'ambiguous'
	RETURNING ` + executionColumns + `
),
reservation AS (
	UPDATE {schema}.spend_ledger l SET state = $8
	FROM resolved WHERE l.execution_id = $1 AND l.state = 'reserved'
),
new_user AS (
	INSERT INTO {schema}.tool_users (tool_id, principal)
	SELECT tool_id, principal FROM resolved WHERE $3
	ON CONFLICT (tool_id, principal) DO NOTHING
	RETURNING 1
),
usage AS (
	INSERT INTO {schema}.tool_usage_shards AS u (tool_id, shard, count, unique_users)
	SELECT tool_id, $9::smallint, 1, (SELECT count(*) FROM new_user) FROM resolved WHERE $3
	ON CONFLICT (tool_id, shard) DO UPDATE
	SET count = u.count + 1, unique_users = u.unique_users + EXCLUDED.unique_users
)
SELECT * FROM resolved`

// ResolveExecution records a person's finding about an ambiguous execution
// atomically: its status and resolution, the resolved response, the
// reservation charged or released, and for completed the tool's usage
// counters. ErrNotFound, ErrAlreadyResolved or ErrNotAmbiguous otherwise.
// The commit waits for the disk, as a finish's does.
func (s *Store) ResolveExecution(ctx context.Context, r storage.Resolve) (storage.Execution, error) {
	if err := r.Check(); err != nil {
		return storage.Execution{}, err
	}
	response := r.Response
	if response == nil {
		// A finished execution always has a response; NULL means running.
		response = []byte{}
	}
	charged := r.Outcome == storage.ExecutionCompleted
	e, err := scanExecution(s.pool.QueryRow(ctx, s.sql(resolveSQL),
		bytesOf(r.ExecutionID), string(r.Outcome), charged, response, r.ResolvedBy, r.Now, r.Note,
		ledgerState(charged), usageShard(r.ExecutionID)))
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Execution{}, s.resolveFailure(ctx, r)
	}
	if err != nil {
		return storage.Execution{}, err
	}
	return e, nil
}

// resolveFailure says why resolveSQL wrote nothing, which costs a second
// round trip: no such execution, one resolved before (by a concurrent
// resolution, perhaps, which this one waited for), or one that was never
// ambiguous.
func (s *Store) resolveFailure(ctx context.Context, r storage.Resolve) error {
	var resolved bool
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT resolution_outcome IS NOT NULL FROM {schema}.executions WHERE id = $1`),
		bytesOf(r.ExecutionID)).Scan(&resolved)
	switch {
	case err != nil:
		return translate(err) // no rows: ErrNotFound
	case resolved:
		return storage.ErrAlreadyResolved
	}
	// Ambiguous now but not when resolveSQL ran, it was still running then
	// and has only just finished: not ambiguous at the resolution's moment.
	return storage.ErrNotAmbiguous
}
