package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// TestReservationMigrationKeepsTheHistory: a file written while each call
// had its reservation in the ledger (schema 0009), with calls completed,
// failed, running under a live lease and under one that has ended,
// ambiguous, one whose reservation was already pruned from the ledger,
// and ledger rows of executions pruned before, migrates forward with the
// history limits count unchanged: the same rollups, the same measures and
// oldest calls for windows cut on a day, on a minute and inside one. Then
// a release moves the rollups once, the executions' prune archives in the
// ledger without counting again, the history's prune empties it all, and
// a process from before the migration, reserving in the ledger, is
// refused with an error that says why.
func TestReservationMigrationKeepsTheHistory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	db := migratedBefore(t, path, 10)
	at := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)

	type call struct {
		key, status, tool string
		amount            int64
		created           time.Time
		leaseUntil        time.Time
		ledger            string // its ledger row's state, "" for none
		id, lease         uuid.UUID
	}
	calls := []*call{
		{key: "done", status: "completed", tool: "tool-a", amount: 10000, created: at.Add(5 * time.Second), ledger: "charged"},
		{key: "failed", status: "failed", tool: "tool-b", amount: 2000, created: at.Add(15 * time.Second), ledger: "released"},
		{key: "live", status: "running", tool: "tool-a", amount: 300, created: at.Add(25 * time.Second), leaseUntil: at.Add(time.Hour), ledger: "reserved"},
		{key: "abandoned", status: "running", tool: "tool-b", amount: 40, created: at.Add(35 * time.Second), leaseUntil: at.Add(time.Minute), ledger: "reserved"},
		{key: "ambiguous", status: "ambiguous", tool: "tool-a", amount: 5, created: at.Add(45 * time.Second), ledger: "reserved"},
		{key: "unledgered", status: "completed", tool: "tool-a", amount: 50000, created: at.AddDate(0, 0, -40)},
	}
	for _, c := range calls {
		c.id, c.lease = uuid.New(), uuid.New()
		if c.leaseUntil.IsZero() {
			c.leaseUntil = c.created.Add(time.Minute)
		}
		var response, finishedAt any
		if c.status != "running" {
			response, finishedAt = []byte(`{}`), nanos(c.created.Add(time.Second))
		}
		_, err := db.Exec(`
			INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged, response,
				created_at, finished_at, tool_slug, manifest_digest, price, fee, approval, fingerprint, lease_token, lease_until)
			VALUES (?, 'alice', ?, ?, ?, ?, ?, ?, ?, ?, ?, 'slug', 'sha256:a', ?, 0, 'digest', ?, ?, ?)`,
			idBytes(c.id), c.tool, idBytes(uuid.New()), c.key, c.status, c.amount, boolInt(c.ledger == "charged" || c.ledger == ""),
			response, nanos(c.created), finishedAt, c.amount, "fp-"+c.key, idBytes(c.lease), nanos(c.leaseUntil))
		require.NoError(t, err, c.key)
	}
	// The ledger rows as the store at 0009 wrote them, counted in the
	// rollups by the ledger's insert trigger; three are of executions
	// pruned since.
	ledger := func(id uuid.UUID, tool string, amount int64, state string, created time.Time) {
		t.Helper()
		_, err := db.Exec(`
			INSERT INTO spend_ledger (execution_id, principal, tool_id, amount, state, created_at, minute, day)
			VALUES (?, 'alice', ?, ?, ?, ?, ?, ?)`,
			idBytes(id), tool, amount, state, nanos(created), floorDiv(nanos(created), nanosPerMinute), floorDiv(nanos(created), nanosPerDay))
		require.NoError(t, err)
	}
	for _, c := range calls {
		if c.ledger != "" {
			ledger(c.id, c.tool, c.amount, c.ledger, c.created)
		}
	}
	archived := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	ledger(archived[0], "tool-a", 600000, "charged", at.AddDate(0, 0, -1))
	ledger(archived[1], "tool-b", 70000, "released", at.Add(-2*time.Hour))
	ledger(archived[2], "tool-a", 8000, "reserved", at.Add(-3*time.Minute+5*time.Second))

	// What the store at 0009 measured: a plain sum over its ledger, which
	// held every call limits counted.
	var windows []storage.Limit
	for _, since := range []time.Time{{}, at.Truncate(24 * time.Hour), at.Add(-time.Hour), at.Add(-2*time.Minute - 50*time.Second),
		at.Add(10 * time.Second), at.Add(20 * time.Second), at.Add(40 * time.Second), at.Add(50 * time.Second)} {
		for _, m := range []storage.Measure{storage.MeasureSpend, storage.MeasureCalls} {
			for _, tool := range []string{"", "tool-a"} {
				windows = append(windows, storage.Limit{Measure: m, Since: since, ToolID: tool})
			}
		}
	}
	type measured struct {
		used   string
		oldest time.Time
	}
	plainSum := func(l storage.Limit) measured {
		var (
			calls, spend int64
			first        *int64
		)
		require.NoError(t, db.QueryRow(`
			SELECT count(*), coalesce(sum(iif(state = 'released', 0, amount)), 0),
				min(iif(?3 = 'calls' OR state <> 'released', created_at, NULL))
			FROM spend_ledger WHERE principal = 'alice' AND created_at >= ?1 AND (?2 = '' OR tool_id = ?2)`,
			nanos(l.Since), l.ToolID, string(l.Measure)).Scan(&calls, &spend, &first))
		if l.Measure == storage.MeasureCalls {
			return measured{fmt.Sprint(calls), nullNanos(first)}
		}
		return measured{fromUnits(spend).StringFixed(4), nullNanos(first)}
	}
	want := make([]measured, len(windows))
	for i, l := range windows {
		want[i] = plainSum(l)
	}
	dailyBefore, minuteBefore := readRollups(t, db, "spend_daily"), readRollups(t, db, "spend_minute")

	s, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()

	// The history is what it was.
	assert.Equal(t, dailyBefore, readRollups(t, db, "spend_daily"))
	assert.Equal(t, minuteBefore, readRollups(t, db, "spend_minute"))
	assertRollupsExact(t, db, "after the migration")
	for i, l := range windows {
		used, err := s.MeasureLimits(ctx, "alice", []storage.Limit{l})
		require.NoError(t, err)
		first, err := oldest(s.pool(ctx), "alice", l)
		require.NoError(t, err)
		got := measured{used[0].String(), first}
		if l.Measure == storage.MeasureSpend {
			got.used = used[0].StringFixed(4)
		}
		assert.Equal(t, want[i], got, "%+v (window %+v)", l, windowOf(l.Since))
	}
	// The reservations moved onto their executions; the ledger keeps the
	// archive only.
	for _, c := range calls {
		state, counted := reservationOf(t, db, c.id)
		assert.Equal(t, c.ledger != "", counted, c.key)
		if c.ledger != "" {
			assert.Equal(t, c.ledger, state, c.key)
		}
		assert.Empty(t, archivedOf(t, db, c.id), c.key)
	}
	for _, id := range archived {
		assert.NotEmpty(t, archivedOf(t, db, id))
	}

	// A process from before the migration admits a call as it used to: its
	// ledger row is refused, and its write with it.
	tx, err := db.Begin()
	require.NoError(t, err)
	id := uuid.New()
	_, err = tx.Exec(`
		INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged, created_at,
			fingerprint, lease_token, lease_until)
		VALUES (?, 'alice', 'tool-a', ?, 'old-process', 'running', 100, 0, ?, 'fp', ?, ?)`,
		idBytes(id), idBytes(uuid.New()), nanos(at), idBytes(uuid.New()), nanos(at.Add(time.Hour)))
	require.NoError(t, err)
	_, err = tx.Exec(`
		INSERT INTO spend_ledger (execution_id, principal, tool_id, amount, state, created_at, minute, day)
		VALUES (?, 'alice', 'tool-a', 100, 'reserved', ?, ?, ?)`,
		idBytes(id), nanos(at), floorDiv(nanos(at), nanosPerMinute), floorDiv(nanos(at), nanosPerDay))
	require.ErrorContains(t, err, "0010_reservation_on_execution")
	require.NoError(t, tx.Rollback())
	_, err = db.Exec(`
		INSERT INTO spend_ledger (execution_id, principal, tool_id, amount, state, created_at, minute, day)
		VALUES (?, 'alice', 'tool-a', 300, 'reserved', ?, 0, 0)`, idBytes(calls[2].id), nanos(at))
	require.ErrorContains(t, err, "a toolgate from before it still has this file open", "a second row for a call")
	assert.Equal(t, dailyBefore, readRollups(t, db, "spend_daily"))
	assert.Equal(t, minuteBefore, readRollups(t, db, "spend_minute"))

	// Finishing the live run and resolving the ambiguous call release each
	// amount from its day and its minute, once.
	released := func(rollup map[rollupKey]rollupSums, width int64, cs ...*call) map[rollupKey]rollupSums {
		out := make(map[rollupKey]rollupSums, len(rollup))
		for k, v := range rollup {
			out[k] = v
		}
		for _, c := range cs {
			k := rollupKey{"alice", floorDiv(nanos(c.created), width), c.tool}
			out[k] = rollupSums{out[k].calls, out[k].spend - c.amount}
		}
		return out
	}
	live, amb := calls[2], calls[4]
	finish := storage.Finish{Principal: "alice", Key: live.key, ExecutionID: live.id, LeaseToken: live.lease,
		Status: storage.ExecutionFailed, Response: []byte(`{}`), Now: at.Add(time.Minute)}
	require.NoError(t, s.FinishExecution(ctx, finish))
	require.ErrorIs(t, s.FinishExecution(ctx, finish), storage.ErrLeaseLost)
	resolve := storage.Resolve{ExecutionID: amb.id, Outcome: storage.ExecutionFailed, ResolvedBy: "approver", Now: at.Add(time.Minute)}
	_, err = s.ResolveExecution(ctx, resolve)
	require.NoError(t, err)
	_, err = s.ResolveExecution(ctx, resolve)
	require.ErrorIs(t, err, storage.ErrAlreadyResolved)
	assert.Equal(t, released(dailyBefore, nanosPerDay, live, amb), readRollups(t, db, "spend_daily"))
	assert.Equal(t, released(minuteBefore, nanosPerMinute, live, amb), readRollups(t, db, "spend_minute"))
	assertRollupsExact(t, db, "after the release")
	used, err := s.MeasureLimits(ctx, "alice", []storage.Limit{{Measure: storage.MeasureSpend, Since: at}})
	require.NoError(t, err)
	assert.Equal(t, "1.0040", used[0].StringFixed(4), "the completed call and the abandoned run")

	// A day of results goes: the calls that still count are archived in the
	// ledger, the abandoned run still reserved; the rollups stay.
	dailyKept, minuteKept := readRollups(t, db, "spend_daily"), readRollups(t, db, "spend_minute")
	res, err := s.Prune(ctx, storage.Prune{IdempotencyBefore: at.Add(time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, len(calls), res.Idempotency)
	assert.Equal(t, dailyKept, readRollups(t, db, "spend_daily"))
	assert.Equal(t, minuteKept, readRollups(t, db, "spend_minute"))
	for _, c := range calls {
		assert.Equal(t, map[string]string{"done": "charged", "failed": "released", "live": "released", "abandoned": "reserved",
			"ambiguous": "released", "unledgered": ""}[c.key], archivedOf(t, db, c.id), c.key)
	}
	assertRollupsExact(t, db, "after the executions' prune")

	// The history's prune takes every call out, rollups with them.
	res, err = s.Prune(ctx, storage.Prune{LedgerBefore: at.Add(time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, len(calls)-1+len(archived), res.Ledger)
	assert.Empty(t, readRollups(t, db, "spend_daily"))
	assert.Empty(t, readRollups(t, db, "spend_minute"))
	used, err = s.MeasureLimits(ctx, "alice", []storage.Limit{{Measure: storage.MeasureCalls}, {Measure: storage.MeasureSpend}})
	require.NoError(t, err)
	assert.True(t, used[0].IsZero() && used[1].IsZero(), "%s", used)
}
