package sqlite

import (
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// rollupKey is a rollup row's key: a principal, a UTC day or minute, a tool.
type rollupKey struct {
	principal string
	bucket    int64
	tool      string
}

// rollupSums is what a rollup row counts.
type rollupSums struct{ calls, spend int64 }

// readRollups returns the rows of spend_daily or spend_minute.
func readRollups(t *testing.T, db *sql.DB, table string) map[rollupKey]rollupSums {
	t.Helper()
	bucket := map[string]string{"spend_daily": "day", "spend_minute": "minute"}[table]
	rows, err := db.Query(`SELECT principal, ` + bucket + `, tool_id, calls, spend FROM ` + table)
	require.NoError(t, err)
	defer rows.Close()
	out := make(map[rollupKey]rollupSums)
	for rows.Next() {
		var (
			k rollupKey
			v rollupSums
		)
		require.NoError(t, rows.Scan(&k.principal, &k.bucket, &k.tool, &v.calls, &v.spend))
		out[k] = v
	}
	require.NoError(t, rows.Err())
	return out
}

// countedCalls returns what the rollups must hold, summed in Go from the
// rows they count: counted executions, whose spend is their amount unless
// released, and the ledger's archived rows, whose stored minute and day
// must be their creation's. Buckets are floorDiv's, not the triggers' SQL.
func countedCalls(t *testing.T, db *sql.DB) (daily, minute map[rollupKey]rollupSums) {
	t.Helper()
	daily, minute = make(map[rollupKey]rollupSums), make(map[rollupKey]rollupSums)
	add := func(principal, tool string, createdAt, spend int64) {
		for _, r := range []struct {
			rollup map[rollupKey]rollupSums
			width  int64
		}{{daily, nanosPerDay}, {minute, nanosPerMinute}} {
			k := rollupKey{principal, floorDiv(createdAt, r.width), tool}
			v := r.rollup[k]
			r.rollup[k] = rollupSums{v.calls + 1, v.spend + spend}
		}
	}
	rows, err := db.Query(`
		SELECT principal, tool_id, created_at, iif(` + spendsSQL + `, amount, 0) FROM executions WHERE counted = 1`)
	require.NoError(t, err)
	for rows.Next() {
		var (
			principal, tool   string
			createdAt, amount int64
		)
		require.NoError(t, rows.Scan(&principal, &tool, &createdAt, &amount))
		add(principal, tool, createdAt, amount)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	rows, err = db.Query(`SELECT principal, tool_id, created_at, iif(state = 'released', 0, amount), minute, day FROM spend_ledger`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var (
			principal, tool                  string
			createdAt, amount, minute_, day_ int64
		)
		require.NoError(t, rows.Scan(&principal, &tool, &createdAt, &amount, &minute_, &day_))
		require.Equal(t, floorDiv(createdAt, nanosPerMinute), minute_, "an archived row's minute")
		require.Equal(t, floorDiv(createdAt, nanosPerDay), day_, "an archived row's day")
		add(principal, tool, createdAt, amount)
	}
	require.NoError(t, rows.Err())
	return daily, minute
}

// assertRollupsExact checks that the rollups count exactly the calls the
// executions and the ledger hold, with no row for a bucket with none.
func assertRollupsExact(t *testing.T, db *sql.DB, when string) {
	t.Helper()
	daily, minute := countedCalls(t, db)
	assert.Equal(t, daily, readRollups(t, db, "spend_daily"), "spend_daily %s", when)
	assert.Equal(t, minute, readRollups(t, db, "spend_minute"), "spend_minute %s", when)
}

// reservationOf reads an execution's reservation as its row says it
// (reserved, charged or released) and whether its call still counts.
func reservationOf(t *testing.T, db *sql.DB, id uuid.UUID) (state string, counted bool) {
	t.Helper()
	require.NoError(t, db.QueryRow(`
		SELECT CASE WHEN status IN ('running', 'ambiguous') THEN 'reserved' WHEN charged = 1 THEN 'charged' ELSE 'released' END, counted
		FROM executions WHERE id = ?`, idBytes(id)).Scan(&state, &counted))
	return state, counted
}

// archivedOf reads the ledger's archived row of a pruned execution: its
// state, or "" when it has none.
func archivedOf(t *testing.T, db *sql.DB, id uuid.UUID) string {
	t.Helper()
	var state string
	err := db.QueryRow(`SELECT state FROM spend_ledger WHERE execution_id = ?`, idBytes(id)).Scan(&state)
	if err == sql.ErrNoRows {
		return ""
	}
	require.NoError(t, err)
	return state
}

// TestRollupsStayExact follows calls through every change of their
// reservation, with the rollups held after each to a plain count of the
// rows they count: admission (one before 1970, so the triggers' minute and
// day round down), a charged finish, a released finish, a failed one
// charged, ambiguous finishes resolved each way, a run abandoned, the
// executions' prune that archives them in the ledger, and the history's
// prune of archived rows and of executions that still count.
func TestRollupsStayExact(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	db := rawDB(t, s.Path())
	ctx := t.Context()
	at := time.Date(2030, time.March, 15, 12, 0, 30, 0, time.UTC)
	old := at.AddDate(0, 0, -40)

	type call struct {
		name   string
		tool   string
		amount string
		when   time.Time
		lease  time.Time
		begin  storage.Begin
	}
	calls := map[string]*call{}
	admit := func(name, tool, amount string, when, lease time.Time) *call {
		c := &call{name: name, tool: tool, amount: amount, when: when, lease: lease}
		q := storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: tool, TotalUSD: decimal.RequireFromString(amount),
			CreatedAt: when, ExpiresAt: when.Add(time.Hour), State: storage.QuoteOpen}
		require.NoError(t, s.CreateQuote(ctx, q))
		c.begin = storage.Begin{Principal: "alice", Key: name, Fingerprint: "fp", QuoteID: q.ID, ExecutionID: uuid.New(),
			ToolID: tool, AmountUSD: q.TotalUSD, LeaseToken: uuid.New(), LeaseUntil: lease, Now: when,
			Limits: []storage.Limit{{Measure: storage.MeasureSpend, Max: decimal.NewFromInt(1000)}}}
		_, err := s.BeginExecution(ctx, c.begin)
		require.NoError(t, err, name)
		calls[name] = c
		return c
	}
	finish := func(c *call, status storage.ExecutionStatus, charged bool) {
		t.Helper()
		require.NoError(t, s.FinishExecution(ctx, storage.Finish{Principal: "alice", Key: c.begin.Key, ExecutionID: c.begin.ExecutionID,
			LeaseToken: c.begin.LeaseToken, Status: status, Charged: charged, Response: []byte(`{}`), Now: c.when.Add(time.Second)}))
	}
	resolve := func(c *call, outcome storage.ExecutionStatus) {
		t.Helper()
		_, err := s.ResolveExecution(ctx, storage.Resolve{ExecutionID: c.begin.ExecutionID, Outcome: outcome, ResolvedBy: "approver",
			Response: []byte(`{}`), Now: at})
		require.NoError(t, err)
	}
	spent := func() string {
		used, err := s.MeasureLimits(ctx, "alice", []storage.Limit{{Measure: storage.MeasureSpend}, {Measure: storage.MeasureCalls}})
		require.NoError(t, err)
		return used[0].StringFixed(4) + " in " + used[1].String()
	}
	expectState := func(name, want string) {
		t.Helper()
		state, counted := reservationOf(t, db, calls[name].begin.ExecutionID)
		assert.Equal(t, want, state, name)
		assert.True(t, counted, name)
	}

	// Last month's calls, one of them before 1970, and this month's.
	admit("charged", "tool-a", "1.0000", old, old.Add(time.Minute))
	admit("released", "tool-a", "0.2000", old.Add(time.Second), old.Add(time.Minute))
	admit("abandoned", "tool-b", "0.0300", old.Add(2*time.Second), old.Add(time.Minute))
	admit("amb-charged", "tool-b", "0.0040", old.Add(3*time.Second), old.Add(time.Minute))
	admit("amb-released", "tool-a", "0.0005", old.Add(4*time.Second), old.Add(time.Minute))
	admit("before-1970", "tool-a", "0.6000", time.Unix(-30, -500), time.Unix(30, 0))
	admit("failed-charged", "tool-a", "0.0700", at, at.Add(time.Hour))
	admit("now-charged", "tool-b", "0.0800", at.Add(10*time.Second), at.Add(time.Hour))
	admit("now-released", "tool-b", "0.0900", at.Add(20*time.Second), at.Add(time.Hour))
	admit("live", "tool-a", "0.1000", at.Add(40*time.Second), at.Add(time.Hour))
	for name := range calls {
		expectState(name, "reserved")
	}
	assertRollupsExact(t, db, "after admission")
	assert.Equal(t, "2.1745 in 10", spent())

	before := readRollups(t, db, "spend_daily")
	finish(calls["charged"], storage.ExecutionCompleted, true)
	assert.Equal(t, before, readRollups(t, db, "spend_daily"), "a charge moves no rollup")
	expectState("charged", "charged")
	finish(calls["released"], storage.ExecutionCompleted, false)
	expectState("released", "released")
	assertRollupsExact(t, db, "after a release")
	assert.Equal(t, "1.9745 in 10", spent())

	finish(calls["amb-charged"], storage.ExecutionAmbiguous, false)
	finish(calls["amb-released"], storage.ExecutionAmbiguous, false)
	expectState("amb-charged", "reserved")
	assert.Equal(t, "1.9745 in 10", spent(), "ambiguous calls stay reserved")
	resolve(calls["amb-charged"], storage.ExecutionCompleted)
	resolve(calls["amb-released"], storage.ExecutionFailed)
	_, err := s.ResolveExecution(ctx, storage.Resolve{ExecutionID: calls["amb-released"].begin.ExecutionID,
		Outcome: storage.ExecutionFailed, ResolvedBy: "approver", Now: at})
	require.ErrorIs(t, err, storage.ErrAlreadyResolved)
	expectState("amb-charged", "charged")
	expectState("amb-released", "released")
	assertRollupsExact(t, db, "after the resolutions")
	assert.Equal(t, "1.9740 in 10", spent(), "released once")

	finish(calls["before-1970"], storage.ExecutionFailed, false)
	finish(calls["failed-charged"], storage.ExecutionFailed, true)
	finish(calls["now-charged"], storage.ExecutionCompleted, true)
	finish(calls["now-released"], storage.ExecutionFailed, false)
	expectState("failed-charged", "charged")
	assertRollupsExact(t, db, "after the finishes")
	assert.Equal(t, "1.2840 in 10", spent())

	// A day of results: last month's executions go, into the ledger, the
	// abandoned run still reserved; the rollups stay as they are.
	daily, minute := readRollups(t, db, "spend_daily"), readRollups(t, db, "spend_minute")
	res, err := s.Prune(ctx, storage.Prune{IdempotencyBefore: at.AddDate(0, 0, -1), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, 6, res.Idempotency)
	assert.Equal(t, daily, readRollups(t, db, "spend_daily"), "archiving counts nothing again")
	assert.Equal(t, minute, readRollups(t, db, "spend_minute"))
	for name, want := range map[string]string{"charged": "charged", "released": "released", "abandoned": "reserved",
		"amb-charged": "charged", "amb-released": "released", "before-1970": "released", "now-charged": ""} {
		assert.Equal(t, want, archivedOf(t, db, calls[name].begin.ExecutionID), name)
	}
	assertRollupsExact(t, db, "after the executions' prune")
	assert.Equal(t, "1.2840 in 10", spent())

	// The history's prune, two calls to a step: the archived rows go, then
	// this month's finished executions stop counting; the live run counts
	// until it finishes.
	res, err = s.Prune(ctx, storage.Prune{LedgerBefore: at.Add(time.Hour), Limit: 4})
	require.NoError(t, err)
	assert.Equal(t, 4, res.Ledger)
	assertRollupsExact(t, db, "after a step of the history's prune")
	res, err = s.Prune(ctx, storage.Prune{LedgerBefore: at.Add(time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, 5, res.Ledger, "two archived rows and three executions")
	var archived int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM spend_ledger`).Scan(&archived))
	assert.Zero(t, archived)
	for _, name := range []string{"failed-charged", "now-charged", "now-released"} {
		_, counted := reservationOf(t, db, calls[name].begin.ExecutionID)
		assert.False(t, counted, name)
	}
	assertRollupsExact(t, db, "after the history's prune")
	assert.Equal(t, "0.1000 in 1", spent(), "the live run")

	finish(calls["live"], storage.ExecutionFailed, false)
	assertRollupsExact(t, db, "after the live run's release")
	assert.Equal(t, "0.0000 in 1", spent())
	res, err = s.Prune(ctx, storage.Prune{LedgerBefore: at.Add(time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Ledger)
	assert.Empty(t, readRollups(t, db, "spend_daily"))
	assert.Empty(t, readRollups(t, db, "spend_minute"))
	assert.Equal(t, "0.0000 in 0", spent())
}

// TestLimitsReadExecutionsByPrincipal: the raw rows a limit reads from the
// executions are found on their (principal, created_at) index, as the
// ledger's are on its own, never by a scan.
func TestLimitsReadExecutionsByPrincipal(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	db := rawDB(t, s.Path())
	plan := func(query string, args ...any) []string {
		rows, err := db.Query(`EXPLAIN QUERY PLAN `+query, args...)
		require.NoError(t, err)
		defer rows.Close()
		var steps []string
		for rows.Next() {
			var (
				id, parent, unused int
				detail             string
			)
			require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
			steps = append(steps, detail)
		}
		require.NoError(t, rows.Err())
		return steps
	}
	for name, steps := range map[string][]string{
		"measure": plan(measureManySQL[1], "alice", "", 1, 2, 3, 1, 4, 5),
		"oldest":  plan(oldestSQL, "alice", "", 1, "calls"),
	} {
		assert.Contains(t, steps, "SEARCH executions USING INDEX executions_principal_created (principal=? AND created_at>?"+
			map[string]string{"measure": " AND created_at<?)", "oldest": ")"}[name], name)
		for _, step := range steps {
			assert.NotContains(t, step, "SCAN executions", name)
			assert.NotContains(t, step, "SCAN spend_ledger", name)
		}
	}
}

// An execution id whose execution Prune deleted, while the archive still
// holds its call, stays taken: a second call admitted under it would have
// Prune archive the id a second time, which the archive's unique key
// refuses, and every later Prune would fail on it.
func TestArchivedExecutionIDStaysTaken(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	ctx := t.Context()
	now := time.Date(2030, time.March, 15, 12, 0, 30, 0, time.UTC)
	quote := func(at time.Time) storage.Quote {
		q := storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: "tool-a", TotalUSD: decimal.RequireFromString("0.10"),
			CreatedAt: at, ExpiresAt: at.Add(time.Hour), State: storage.QuoteOpen}
		require.NoError(t, s.CreateQuote(ctx, q))
		return q
	}
	begin := func(q storage.Quote, key string, id uuid.UUID, at time.Time) (storage.Begin, error) {
		b := storage.Begin{Principal: "alice", Key: key, Fingerprint: "fp", QuoteID: q.ID, ExecutionID: id,
			ToolID: "tool-a", AmountUSD: q.TotalUSD, LeaseToken: uuid.New(), LeaseUntil: at.Add(time.Minute), Now: at}
		_, err := s.BeginExecution(ctx, b)
		return b, err
	}
	finish := func(b storage.Begin) {
		require.NoError(t, s.FinishExecution(ctx, storage.Finish{Principal: "alice", Key: b.Key, ExecutionID: b.ExecutionID,
			LeaseToken: b.LeaseToken, Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{}`), Now: b.Now}))
	}
	spent := func() string {
		used, err := s.MeasureLimits(ctx, "alice", []storage.Limit{{Measure: storage.MeasureSpend}, {Measure: storage.MeasureCalls}})
		require.NoError(t, err)
		return used[0].StringFixed(2) + " in " + used[1].String()
	}

	then := now.Add(-48 * time.Hour)
	first, err := begin(quote(then), "k1", uuid.New(), then)
	require.NoError(t, err)
	finish(first)
	res, err := s.Prune(ctx, storage.Prune{IdempotencyBefore: now.Add(-24 * time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	require.Equal(t, 1, res.Idempotency, "the execution is pruned, its call archived")

	reused := quote(now)
	_, err = begin(reused, "k2", first.ExecutionID, now)
	require.ErrorIs(t, err, storage.ErrAlreadyExists)
	got, err := s.GetQuote(ctx, reused.ID)
	require.NoError(t, err)
	assert.Equal(t, storage.QuoteOpen, got.State, "nothing was written")
	_, err = s.GetIdempotency(ctx, "alice", "k2")
	require.ErrorIs(t, err, storage.ErrNotFound)
	assert.Equal(t, "0.10 in 1", spent())

	// A fresh id is admitted, and Prune keeps working through both.
	fresh, err := begin(reused, "k3", uuid.New(), now)
	require.NoError(t, err)
	finish(fresh)
	res, err = s.Prune(ctx, storage.Prune{IdempotencyBefore: now.Add(time.Hour), LedgerBefore: now.Add(-24 * time.Hour), Limit: pruneAll})
	require.NoError(t, err)
	assert.Equal(t, storage.PruneResult{Idempotency: 1, Ledger: 1}, res)
	assert.Equal(t, "0.10 in 1", spent())
}

// pruneAll is the most rows of each kind one Prune of these tests deletes:
// the gateway's batch, more than any test stores. A store is handed
// complete parameters, so a test says how many too.
const pruneAll = 1000
