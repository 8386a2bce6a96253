package sqlite

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// TestBudgetHistoryPrunedByDay: Prune takes the budgets' history out a
// step at a time, never more rows of it per call than its limit, until
// what is left is exactly the days from the one before the cutoff's UTC
// date (in any zone's days) and the calls one by one that may be on those
// days in the zone furthest ahead.
func TestBudgetHistoryPrunedByDay(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	db := rawDB(t, s.Path())
	ctx := t.Context()
	cutoff := time.Date(2030, time.March, 1, 0, 0, 0, 0, time.UTC)
	zones := map[string]*time.Location{"utc": time.UTC, "east": time.FixedZone("UTC+14", 14*60*60), "west": time.FixedZone("UTC-12", -12*60*60)}

	// A call every five hours from February 20th, in all three budgets.
	n := 0
	keptDays := map[string]bool{} // budget and day of what the prune must keep
	for at := time.Date(2030, time.February, 20, 1, 0, 0, 0, time.UTC); at.Before(cutoff.AddDate(0, 0, 3)); at = at.Add(5 * time.Hour) {
		q := storage.Quote{ID: uuid.New(), Principal: fmt.Sprint("member-", n%3), ToolID: "tool-a", ToolSlug: "slug-a",
			TotalUSD: decimal.RequireFromString("0.10"), CreatedAt: at, ExpiresAt: at.Add(time.Hour), State: storage.QuoteOpen}
		require.NoError(t, s.CreateQuote(ctx, q))
		b := storage.Begin{Principal: q.Principal, Key: fmt.Sprint(n), Fingerprint: "fp", QuoteID: q.ID, ExecutionID: uuid.New(),
			ToolID: q.ToolID, ToolSlug: q.ToolSlug, AmountUSD: q.TotalUSD, LeaseToken: uuid.New(), LeaseUntil: at.Add(time.Minute), Now: at}
		for _, id := range []string{"utc", "east", "west"} {
			day := at.In(zones[id]).Format(dayLayout)
			b.Budgets = append(b.Budgets, storage.BudgetDay{Budget: id, Day: day})
			if day >= "2030-02-28" {
				keptDays[id+" "+day] = true
			}
		}
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		require.NoError(t, s.FinishExecution(ctx, storage.Finish{Principal: b.Principal, Key: b.Key, ExecutionID: b.ExecutionID,
			LeaseToken: b.LeaseToken, Status: storage.ExecutionCompleted, Charged: true, Response: []byte("{}"), Now: at}))
		n++
	}
	total := func() int {
		rows := budgetRows(t, db)
		return rows["budget_daily"] + rows["budget_calls"] + rows["budget_spend"]
	}

	const limit = 7
	before := total()
	for {
		_, err := s.Prune(ctx, storage.Prune{LedgerBefore: cutoff, Limit: limit})
		require.NoError(t, err)
		after := total()
		require.LessOrEqual(t, before-after, limit, "one Prune deletes at most its limit of the budgets' history")
		if after == before {
			break
		}
		before = after
	}

	firstDay := "2030-02-28"
	callsFrom := time.Date(2030, time.February, 28, 0, 0, 0, 0, time.UTC).Add(-14 * time.Hour)
	var stale int
	require.NoError(t, db.QueryRow(`
		SELECT (SELECT count(*) FROM budget_daily WHERE day < ?1) + (SELECT count(*) FROM budget_spend WHERE day < ?1)
			+ (SELECT count(*) FROM budget_calls WHERE created_at < ?2)`, firstDay, nanos(callsFrom)).Scan(&stale))
	assert.Zero(t, stale, "nothing older than the cutoff's day before is left")
	var kept, keptCalls, wantCalls int
	for _, table := range []string{"budget_daily", "budget_spend"} {
		require.NoError(t, db.QueryRow(`SELECT count(DISTINCT budget || ' ' || day) FROM `+table).Scan(&kept))
		assert.Equal(t, len(keptDays), kept, "%s keeps each budget's days from the one before the cutoff's", table)
	}
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM budget_calls`).Scan(&keptCalls))
	require.NoError(t, db.QueryRow(`SELECT 3 * count(*) FROM executions WHERE created_at >= ?`, nanos(callsFrom)).Scan(&wantCalls))
	assert.Equal(t, wantCalls, keptCalls, "the calls created from the first kept day's start in the zone furthest ahead")
}
