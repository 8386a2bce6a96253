package memory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// begin quotes and admits one call of amount counting in days.
func begin(t *testing.T, s *Store, principal, toolID, key string, amount decimal.Decimal, at time.Time, days []storage.BudgetDay) storage.Begin {
	t.Helper()
	q := storage.Quote{
		ID: uuid.New(), Principal: principal, ToolID: toolID, ToolSlug: "slug-" + toolID,
		TotalUSD: amount, CreatedAt: at, ExpiresAt: at.Add(5 * time.Minute), State: storage.QuoteOpen,
	}
	require.NoError(t, s.CreateQuote(t.Context(), q))
	b := storage.Begin{
		Principal: principal, Key: key, Fingerprint: key, QuoteID: q.ID, ExecutionID: uuid.New(),
		ToolID: toolID, ToolSlug: q.ToolSlug, AmountUSD: amount, Budgets: days,
		LeaseToken: uuid.New(), LeaseUntil: at.Add(time.Minute), Now: at,
	}
	_, err := s.BeginExecution(t.Context(), b)
	require.NoError(t, err)
	return b
}

// finish finishes b with status, charging a completed call.
func finish(t *testing.T, s *Store, b storage.Begin, status storage.ExecutionStatus) {
	t.Helper()
	require.NoError(t, s.FinishExecution(t.Context(), storage.Finish{
		Principal: b.Principal, Key: b.Key, ExecutionID: b.ExecutionID, LeaseToken: b.LeaseToken,
		Status: status, Charged: status == storage.ExecutionCompleted, Response: []byte("{}"), Now: b.Now,
	}))
}

// budgetSizes reports how many entries the budgets' structures hold.
func (s *Store) budgetSizes() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	days, rows, calls := 0, 0, 0
	for _, bl := range s.budgets {
		days += len(bl.days)
		for _, d := range bl.days {
			rows += len(d.rows)
		}
		calls += bl.calls.len()
	}
	return map[string]int{
		"budgets":      len(s.budgets),
		"days":         days,
		"dayRows":      rows,
		"callRows":     calls,
		"budgetByExec": len(s.budgetByExec),
	}
}

func TestBudgetPruneKeepsMemoryBounded(t *testing.T) {
	t.Parallel()
	s := New()
	const n = 2000
	amount := decimal.RequireFromString("0.11")
	for i := range n {
		// Sixty days of traffic, out of time order, in one of three teams
		// and their org; every fifth call fails, as some do.
		at := t0.Add(-time.Duration((i*7919)%n) * 43 * time.Minute)
		days := []storage.BudgetDay{
			{Budget: fmt.Sprint("team-", i%3), Day: at.Format(time.DateOnly)},
			{Budget: "org", Day: at.Format(time.DateOnly)},
		}
		b := begin(t, s, fmt.Sprint("p", i%31), "tool-a", fmt.Sprint("k", i), amount, at, days)
		status := storage.ExecutionCompleted
		if i%5 == 0 {
			status = storage.ExecutionFailed
		}
		finish(t, s, b, status)
	}
	for name, size := range s.budgetSizes() {
		if name != "budgetByExec" { // every call settled, so none waits
			require.NotZero(t, size, name)
		}
	}

	cutoff := storage.Prune{IdempotencyBefore: t0.Add(48 * time.Hour), QuotesBefore: t0.Add(48 * time.Hour), LedgerBefore: t0.Add(48 * time.Hour), Limit: pruneAll}
	ledger := 0
	for range 100 {
		res, err := s.Prune(t.Context(), cutoff)
		require.NoError(t, err)
		assert.LessOrEqual(t, res.Ledger, pruneAll, "budget rows share the ledger's cap")
		if res == (storage.PruneResult{}) {
			break
		}
		ledger += res.Ledger
	}
	assert.Equal(t, 3*n, ledger, "each call's row and its two budget rows")
	for name, size := range s.budgetSizes() {
		assert.Zero(t, size, name)
	}
}

func TestBudgetPruneKeepsRunningCalls(t *testing.T) {
	t.Parallel()
	s := New()
	at := t0.AddDate(0, -2, 0)
	days := []storage.BudgetDay{{Budget: "team", Day: at.Format(time.DateOnly)}}
	running := begin(t, s, "alice", "tool-a", "run", decimal.RequireFromString("1.00"), at, days)
	ambiguous := begin(t, s, "alice", "tool-a", "amb", decimal.RequireFromString("2.00"), at, days)
	finish(t, s, ambiguous, storage.ExecutionAmbiguous)
	done := begin(t, s, "alice", "tool-a", "done", decimal.RequireFromString("4.00"), at, days)
	finish(t, s, done, storage.ExecutionCompleted)

	spend := func() decimal.Decimal {
		used, err := s.MeasureLimits(t.Context(), "", []storage.Limit{{Budget: "team", Measure: storage.MeasureSpend}})
		require.NoError(t, err)
		return used[0]
	}
	require.True(t, decimal.RequireFromString("7.00").Equal(spend()))
	// The running call's lease is live long after its day: its process
	// still reports, and a person still resolves the ambiguous one.
	_, err := s.Prune(t.Context(), storage.Prune{LedgerBefore: t0, Limit: pruneAll})
	require.NoError(t, err)
	assert.True(t, decimal.RequireFromString("3.00").Equal(spend()), "only the settled call goes: %s", spend())

	finish(t, s, running, storage.ExecutionFailed)
	_, err = s.ResolveExecution(t.Context(), storage.Resolve{ExecutionID: ambiguous.ExecutionID, Outcome: storage.ExecutionCompleted, ResolvedBy: "pat", Now: t0})
	require.NoError(t, err)
	assert.True(t, decimal.RequireFromString("2.00").Equal(spend()), "settled on its day: %s", spend())
	_, err = s.Prune(t.Context(), storage.Prune{LedgerBefore: t0, Limit: pruneAll})
	require.NoError(t, err)
	assert.Zero(t, s.budgetSizes()["dayRows"])
}

// TestBudgetMeasureMatchesBruteForce checks the per-day sums, and the
// summaries read from them, against counting every call.
func TestBudgetMeasureMatchesBruteForce(t *testing.T) {
	t.Parallel()
	s := New()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(3, 4))
	type row struct {
		principal, tool, day string
		amount               decimal.Decimal
		at                   time.Time
		state                ledgerState
		inTeam               bool
	}
	var rows []row
	for i := range 500 {
		at := t0.Add(-time.Duration(rng.IntN(20*24*3600)) * time.Second)
		r := row{
			principal: fmt.Sprint("p", rng.IntN(4)),
			tool:      fmt.Sprint("tool-", rng.IntN(3)),
			day:       at.Add(9 * time.Hour).Format(time.DateOnly), // a zone ahead of UTC
			amount:    decimal.New(rng.Int64N(10000), -4),
			at:        at,
			inTeam:    rng.IntN(2) == 0,
		}
		days := []storage.BudgetDay{{Budget: "org", Day: r.day}}
		if r.inTeam {
			days = append([]storage.BudgetDay{{Budget: "team", Day: r.day}}, days...)
		}
		b := begin(t, s, r.principal, r.tool, fmt.Sprint(i), r.amount, at, days)
		switch rng.IntN(4) {
		case 0: // left running
		case 1:
			finish(t, s, b, storage.ExecutionCompleted)
			r.state = ledgerCharged
		case 2:
			finish(t, s, b, storage.ExecutionFailed)
			r.state = ledgerReleased
		case 3:
			finish(t, s, b, storage.ExecutionAmbiguous)
			if rng.IntN(2) == 0 {
				_, err := s.ResolveExecution(ctx, storage.Resolve{ExecutionID: b.ExecutionID, Outcome: storage.ExecutionFailed, ResolvedBy: "pat", Now: at})
				require.NoError(t, err)
				r.state = ledgerReleased
			}
		}
		rows = append(rows, r)
	}
	in := func(r row, budget string) bool { return budget == "org" || r.inTeam }

	for range 200 {
		budget := []string{"team", "org"}[rng.IntN(2)]
		tool := []string{"", "tool-0", "tool-2"}[rng.IntN(3)]
		from := t0.AddDate(0, 0, -rng.IntN(22)).Format(time.DateOnly)
		since := t0.Add(-time.Duration(rng.IntN(21*24*3600)) * time.Second)

		wantSpend, wantCalls := decimal.Zero, int64(0)
		for _, r := range rows {
			if !in(r, budget) || (tool != "" && r.tool != tool) {
				continue
			}
			if r.day >= from && r.state != ledgerReleased {
				wantSpend = wantSpend.Add(r.amount)
			}
			if !r.at.Before(since) {
				wantCalls++
			}
		}
		got, err := s.MeasureLimits(ctx, "", []storage.Limit{
			{Budget: budget, ToolID: tool, Measure: storage.MeasureSpend, FromDay: from},
			{Budget: budget, ToolID: tool, Measure: storage.MeasureCalls, Since: since},
		})
		require.NoError(t, err)
		assert.True(t, wantSpend.Equal(got[0]), "%s spend on %q from %s: want %s, got %s", budget, tool, from, wantSpend, got[0])
		assert.True(t, decimal.NewFromInt(wantCalls).Equal(got[1]), "%s calls on %q since %s: want %d, got %s", budget, tool, since, wantCalls, got[1])

		until := t0.AddDate(0, 0, -rng.IntN(10)).Format(time.DateOnly)
		grouping := []toolgatetype.SpendGrouping{toolgatetype.SpendByDay, toolgatetype.SpendByTool, toolgatetype.SpendByPrincipal}[rng.IntN(3)]
		want := map[string]storage.SpendGroup{}
		for _, r := range rows {
			if !in(r, budget) || r.state != ledgerCharged || r.day < from || r.day >= until {
				continue
			}
			key := map[toolgatetype.SpendGrouping]string{
				toolgatetype.SpendByDay: r.day, toolgatetype.SpendByTool: "slug-" + r.tool, toolgatetype.SpendByPrincipal: r.principal,
			}[grouping]
			g := want[key]
			g.Key, g.TotalUSD, g.Count = key, g.TotalUSD.Add(r.amount), g.Count+1
			want[key] = g
		}
		groups, err := s.SpendSummary(ctx, storage.SpendQuery{Budget: budget, GroupBy: grouping, FromDay: from, UntilDay: until})
		require.NoError(t, err)
		require.Len(t, groups, len(want), "%s by %s in [%s, %s)", budget, grouping, from, until)
		for i, g := range groups {
			if i > 0 {
				assert.Less(t, groups[i-1].Key, g.Key, "ascending keys")
			}
			w := want[g.Key]
			assert.True(t, w.TotalUSD.Equal(g.TotalUSD) && w.Count == g.Count, "%s by %s, %s: want %v, got %v", budget, grouping, g.Key, w, g)
		}
	}
}

func TestBudgetMistakesAreRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		limit  storage.Limit
		budget []storage.BudgetDay
	}{
		{name: "a day that is not one", budget: []storage.BudgetDay{{Budget: "team", Day: "15/03/2030"}}},
		{name: "a budget with no id", budget: []storage.BudgetDay{{Day: "2030-03-15"}}},
		{name: "a budget twice", budget: []storage.BudgetDay{{Budget: "team", Day: "2030-03-15"}, {Budget: "team", Day: "2030-03-16"}}},
		{name: "a first day that is not one", limit: storage.Limit{Budget: "team", Measure: storage.MeasureSpend, FromDay: "March"}},
		{name: "a first day on a principal's limit", limit: storage.Limit{Measure: storage.MeasureSpend, FromDay: "2030-03-01"}},
		{name: "a first day on a call limit", limit: storage.Limit{Budget: "team", Measure: storage.MeasureCalls, FromDay: "2030-03-01"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New()
			q := storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: "tool-a", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute), State: storage.QuoteOpen}
			require.NoError(t, s.CreateQuote(t.Context(), q))
			b := storage.Begin{
				Principal: "alice", Key: "k", QuoteID: q.ID, ExecutionID: uuid.New(), ToolID: "tool-a",
				Budgets: tc.budget, LeaseToken: uuid.New(), LeaseUntil: t0.Add(time.Minute), Now: t0,
			}
			if tc.limit.Measure != "" {
				b.Limits = []storage.Limit{tc.limit}
				_, err := s.MeasureLimits(t.Context(), "alice", b.Limits)
				require.Error(t, err)
			}
			_, err := s.BeginExecution(t.Context(), b)
			require.Error(t, err)
			_, err = s.GetIdempotency(t.Context(), "alice", "k")
			require.ErrorIs(t, err, storage.ErrNotFound, "nothing was written")
		})
	}
}

func TestEventIDsOutOfRangeAreRefused(t *testing.T) {
	t.Parallel()
	s := New()
	for _, id := range []string{"", strings.Repeat("x", storage.MaxEventIDLength+1)} {
		_, err := s.AddEvent(t.Context(), storage.NewEvent{ID: id, Type: "budget.threshold", Payload: []byte(`{}`), CreatedAt: t0})
		require.Error(t, err, "%d bytes", len(id))
	}
}
