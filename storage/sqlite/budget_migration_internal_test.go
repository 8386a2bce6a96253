package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetRows counts the rows of the budgets' tables.
func budgetRows(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"budget_daily", "budget_calls", "budget_spend"} {
		var n int
		require.NoError(t, db.QueryRow(`SELECT count(*) FROM `+table).Scan(&n))
		out[table] = n
	}
	return out
}

// TestBudgetsMigrationKeepsCalls: a file written before budgets (schema
// 0011), with a call completed and one still running under a live lease,
// migrates forward with both where they were: each reads back as it was,
// in no budget; the finished one replays and the running one finishes
// under its lease; the principal's limits count what they counted. The
// budgets count the calls admitted from then on, and only those.
func TestBudgetsMigrationKeepsCalls(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	db := migratedBefore(t, path, 12)
	at := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)

	type call struct {
		key, status string
		id, lease   uuid.UUID
		response    []byte
	}
	calls := []*call{
		{key: "done", status: "completed", response: []byte(`{"call":"done"}`)},
		{key: "live", status: "running"},
	}
	for _, c := range calls {
		c.id, c.lease = uuid.New(), uuid.New()
		quote := uuid.New()
		var finishedAt any
		if c.response != nil {
			finishedAt = nanos(at.Add(time.Second))
		}
		_, err := db.Exec(`
			INSERT INTO quotes (id, principal, tool_id, tool_slug, tool_version, manifest_digest, price, fee, total,
				created_at, expires_at, state, used_by_key)
			VALUES (?, 'alice', 'tool-a', 'slug-a', 1, 'sha256:a', 1000, 100, 1100, ?, ?, 'used', ?)`,
			idBytes(quote), nanos(at), nanos(at.Add(time.Hour)), c.key)
		require.NoError(t, err)
		_, err = db.Exec(`
			INSERT INTO executions (id, principal, tool_id, quote_id, idempotency_key, status, amount, charged, response,
				created_at, finished_at, tool_slug, manifest_digest, price, fee, approval, fingerprint, lease_token, lease_until)
			VALUES (?, 'alice', 'tool-a', ?, ?, ?, 1100, ?, ?, ?, ?, 'slug-a', 'sha256:a', 1000, 100, 'digest', ?, ?, ?)`,
			idBytes(c.id), idBytes(quote), c.key, c.status, boolInt(c.status == "completed"), c.response,
			nanos(at), finishedAt, "fp-"+c.key, idBytes(c.lease), nanos(at.Add(time.Hour)))
		require.NoError(t, err)
	}
	dailyBefore, minuteBefore := readRollups(t, db, "spend_daily"), readRollups(t, db, "spend_minute")

	s, err := Open(t.Context(), path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	assert.Contains(t, appliedVersions(t, db), 12)
	assert.Equal(t, dailyBefore, readRollups(t, db, "spend_daily"))
	assert.Equal(t, minuteBefore, readRollups(t, db, "spend_minute"))

	for _, c := range calls {
		e, err := s.GetExecution(ctx, c.id)
		require.NoError(t, err, c.key)
		assert.Equal(t, storage.ExecutionStatus(c.status), e.Status, c.key)
		assert.Equal(t, "slug-a", e.ToolSlug, c.key)
		assert.Equal(t, c.response, e.Response, c.key)
		assert.Nil(t, e.Budgets, "%s: in no budget", c.key)
	}
	rec, err := s.GetIdempotency(ctx, "alice", "done")
	require.NoError(t, err)
	assert.True(t, rec.Finished)
	assert.Equal(t, calls[0].response, rec.Response, "the finished call replays")
	used, err := s.MeasureLimits(ctx, "alice", []storage.Limit{{Measure: storage.MeasureSpend}, {Measure: storage.MeasureCalls}})
	require.NoError(t, err)
	assert.Equal(t, "0.2200", used[0].StringFixed(4), "both calls still count")
	assert.Equal(t, "2", used[1].String())

	live := calls[1]
	require.NoError(t, s.FinishExecution(ctx, storage.Finish{Principal: "alice", Key: live.key, ExecutionID: live.id,
		LeaseToken: live.lease, Status: storage.ExecutionFailed, Response: []byte(`{}`), Now: at.Add(time.Minute)}))
	used, err = s.MeasureLimits(ctx, "alice", []storage.Limit{{Measure: storage.MeasureSpend}})
	require.NoError(t, err)
	assert.Equal(t, "0.1100", used[0].StringFixed(4), "the failed run gave its amount back")
	assert.Equal(t, map[string]int{"budget_daily": 0, "budget_calls": 0, "budget_spend": 0}, budgetRows(t, db),
		"calls from before the migration count in no budget")

	// A call admitted now counts in its budgets.
	q := storage.Quote{ID: uuid.New(), Principal: "bob", ToolID: "tool-a", ToolSlug: "slug-a", TotalUSD: decimal.RequireFromString("0.5"),
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), State: storage.QuoteOpen}
	require.NoError(t, s.CreateQuote(ctx, q))
	b := storage.Begin{Principal: "bob", Key: "new", Fingerprint: "fp", QuoteID: q.ID, ExecutionID: uuid.New(), ToolID: "tool-a",
		ToolSlug: "slug-a", AmountUSD: q.TotalUSD, LeaseToken: uuid.New(), LeaseUntil: at.Add(time.Hour), Now: at.Add(time.Minute),
		Budgets: []storage.BudgetDay{{Budget: "team", Day: "2030-03-15"}}}
	_, err = s.BeginExecution(ctx, b)
	require.NoError(t, err)
	require.NoError(t, s.FinishExecution(ctx, storage.Finish{Principal: "bob", Key: "new", ExecutionID: b.ExecutionID,
		LeaseToken: b.LeaseToken, Status: storage.ExecutionCompleted, Charged: true, Response: []byte(`{}`), Now: at.Add(time.Minute)}))
	used, err = s.MeasureLimits(ctx, "nobody", []storage.Limit{{Budget: "team", Measure: storage.MeasureSpend, FromDay: "2030-03-01"}})
	require.NoError(t, err)
	assert.Equal(t, "0.5000", used[0].StringFixed(4))
	groups, err := s.SpendSummary(ctx, storage.SpendQuery{Budget: "team", GroupBy: toolgatetype.SpendByPrincipal})
	require.NoError(t, err)
	require.Len(t, groups, 1)
	assert.Equal(t, "bob", groups[0].Key)
	listed, err := s.ListExecutions(ctx, storage.ExecutionQuery{Principals: []string{"alice", "bob"}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, listed, 3)
	assert.Equal(t, b.Budgets, listed[0].Budgets, "the new call, listed first")
}
