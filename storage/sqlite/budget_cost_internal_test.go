package sqlite

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// TestCallsInNoBudgetPayNothing: a gateway with no budgets runs the
// statements it ran before budgets existed, and writes no row of theirs,
// through every outcome of a call: the writer never prepares a statement
// that reads or writes a budget's table.
func TestCallsInNoBudgetPayNothing(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	ctx := t.Context()
	at := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	for i, outcome := range []storage.ExecutionStatus{storage.ExecutionCompleted, storage.ExecutionFailed, storage.ExecutionAmbiguous} {
		q := testQuote()
		require.NoError(t, s.CreateQuote(ctx, q))
		b := storage.Begin{Principal: q.Principal, Key: string(outcome), Fingerprint: "fp", QuoteID: q.ID, ExecutionID: uuid.New(),
			ToolID: q.ToolID, AmountUSD: q.TotalUSD, LeaseToken: uuid.New(), LeaseUntil: at.Add(time.Minute), Now: at.Add(time.Duration(i)),
			Limits: []storage.Limit{{Measure: storage.MeasureSpend, Max: decimal.NewFromInt(100)}, {Measure: storage.MeasureCalls, Since: at.Add(-time.Minute), Max: decimal.NewFromInt(100)}}}
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		require.NoError(t, s.FinishExecution(ctx, storage.Finish{Principal: b.Principal, Key: b.Key, ExecutionID: b.ExecutionID,
			LeaseToken: b.LeaseToken, Status: outcome, Charged: outcome == storage.ExecutionCompleted, Response: []byte("{}"), Now: at}))
		if outcome == storage.ExecutionAmbiguous {
			_, err := s.ResolveExecution(ctx, storage.Resolve{ExecutionID: b.ExecutionID, Outcome: storage.ExecutionCompleted,
				ResolvedBy: "pat", Response: []byte("{}"), Now: at})
			require.NoError(t, err)
		}
	}
	// Read through the writer, so its statement cache is read alone.
	var prepared []string
	require.NoError(t, s.write(ctx, func(tx *writeTx) error {
		for query := range tx.w.stmts {
			prepared = append(prepared, query)
		}
		return nil
	}))
	require.NotEmpty(t, prepared)
	for _, query := range prepared {
		assert.NotContains(t, query, "budget_", "a statement prepared for calls in no budget")
	}
	assert.Equal(t, map[string]int{"budget_daily": 0, "budget_calls": 0, "budget_spend": 0},
		budgetRows(t, rawDB(t, s.Path())))
}

// TestBudgetReadsUseTheirKeys: every statement that reads or deletes a
// budget's rows is a search on a key, never a walk of a whole table, so
// a call costs the same however long the budgets' history.
func TestBudgetReadsUseTheirKeys(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	db := rawDB(t, s.Path())
	const budgets = `'[{"budget":"team","day":"2030-03-15"}]'`
	queries := []string{
		budgetMeasureManySQL[1], budgetMeasureManySQL[measureBatch],
		budgetOldestCallSQL, budgetOldestSpendSQL,
		budgetSpendQueries["day"], budgetSpendQueries["principal"], budgetSpendQueries["tool"],
		// What the triggers of 0012_budgets.sql run when a call settles.
		`UPDATE budget_daily SET spend = 0 WHERE tool_id = 'tool-a'
			AND (budget, day) IN (SELECT b.value ->> 'budget', b.value ->> 'day' FROM json_each(` + budgets + `) b)`,
		`UPDATE budget_calls SET released = 1 WHERE created_at = 0 AND execution_id = x'00'
			AND budget IN (SELECT b.value ->> 'budget' FROM json_each(` + budgets + `) b)`,
	}
	for _, h := range budgetHistory {
		queries = append(queries, h.delete, `SELECT budget FROM `+h.table+` WHERE budget > ? ORDER BY budget LIMIT 1`)
	}
	for _, query := range queries {
		args := make([]any, paramCount(query))
		for i := range args {
			args[i] = "x"
		}
		rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
		require.NoError(t, err, query)
		var plan []string
		for rows.Next() {
			var (
				id, parent, unused int
				detail             string
			)
			require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
			plan = append(plan, detail)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		for _, step := range plan {
			assert.False(t, strings.HasPrefix(step, "SCAN budget_"),
				"%s\nwalks a whole table: %s", query, strings.Join(plan, "\n"))
		}
	}
}

// paramCount is how many arguments query takes: its highest ?N, or its
// count of bare ?.
func paramCount(query string) int {
	n := 0
	for _, m := range regexp.MustCompile(`\?(\d*)`).FindAllStringSubmatch(query, -1) {
		if m[1] == "" {
			n++
			continue
		}
		k, _ := strconv.Atoi(m[1])
		n = max(n, k)
	}
	return n
}
