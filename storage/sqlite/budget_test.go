package sqlite_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/toolgatetype"
)

// inBudgets is beginFor with the call counted in budgets on day.
func inBudgets(b storage.Begin, day string, budgets ...string) storage.Begin {
	for _, id := range budgets {
		b.Budgets = append(b.Budgets, storage.BudgetDay{Budget: id, Day: day})
	}
	return b
}

// TestTwoStoresShareABudget: the members of one team call through two
// Stores on one file, as through two gateway processes on one machine,
// all at once. The team's daily limit and its rate per minute are never
// passed, whoever calls through which Store, and both Stores then see the
// same use of the team and of the organization above it.
func TestTwoStoresShareABudget(t *testing.T) {
	t.Parallel()
	day := t0.Format("2006-01-02")
	members := []string{"alice", "bob", "carol"}
	cases := []struct {
		name    string
		racers  int
		limit   storage.Limit
		winners int
	}{
		{
			name: "daily limit", racers: 200,
			limit:   storage.Limit{Budget: "search", Measure: storage.MeasureSpend, FromDay: day, Max: dec("5.50")},
			winners: 50,
		},
		{
			name: "rate per minute", racers: 200,
			limit:   storage.Limit{Budget: "search", Measure: storage.MeasureCalls, Since: t0.Add(-time.Minute), Max: dec("30")},
			winners: 30,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "shared.db")
			stores := []*sqlite.Store{openStore(t, path), openStore(t, path)}
			ctx := t.Context()
			org := storage.Limit{Budget: "acme", Measure: storage.MeasureSpend, FromDay: day, Max: dec("1000")}

			begins := make([]storage.Begin, tc.racers)
			for i := range begins {
				q := quoteFor(members[i%len(members)], "tool-a", "0.11", t0)
				require.NoError(t, stores[i%2].CreateQuote(ctx, q))
				// Each member's own limits pass; the team's decides.
				own := storage.Limit{Measure: storage.MeasureSpend, Since: t0.Truncate(24 * time.Hour), Max: dec("100")}
				begins[i] = inBudgets(beginFor(q, fmt.Sprint("key-", i), t0, own, tc.limit, org), day, "search", "acme")
			}
			errs := make([]error, tc.racers)
			race(tc.racers, func(i int) {
				_, errs[i] = stores[i%2].BeginExecution(ctx, begins[i])
			})
			winners := 0
			for _, err := range errs {
				if err == nil {
					winners++
					continue
				}
				var le *storage.LimitError
				if assert.ErrorAs(t, err, &le) && assert.Len(t, le.Failures, 1) {
					assert.Equal(t, 1, le.Failures[0].Index, "the team's limit refuses")
					assert.Equal(t, "search", le.Failures[0].Limit.Budget)
				}
			}
			assert.Equal(t, tc.winners, winners)

			spent := dec("0.11").Mul(dec(fmt.Sprint(tc.winners)))
			for _, s := range stores {
				// The principal given is not looked at: every member's calls count.
				got, err := s.MeasureLimits(ctx, "someone-else", []storage.Limit{
					{Budget: "search", Measure: storage.MeasureSpend, FromDay: day},
					{Budget: "search", Measure: storage.MeasureCalls, Since: t0.Add(-time.Minute)},
					{Budget: "acme", Measure: storage.MeasureSpend, FromDay: day},
					{Budget: "acme", Measure: storage.MeasureSpend, FromDay: day, ToolID: "tool-b"},
				})
				require.NoError(t, err)
				assert.Truef(t, spent.Equal(got[0]), "the team's spend seen by each store: %s", got[0])
				assert.EqualValues(t, tc.winners, got[1].IntPart(), "the team's calls seen by each store")
				assert.Truef(t, spent.Equal(got[2]), "the organization's spend: %s", got[2])
				assert.True(t, got[3].IsZero(), "no call of tool-b: %s", got[3])
			}
		})
	}
}

// TestBudgetGivesBackAndHolds: a failed call gives its amount back to each
// of its budgets, an ambiguous one holds it until a person resolves it,
// and the charged calls are the budget's spend by day, principal and
// tool, of every member and only of the budget's calls.
func TestBudgetGivesBackAndHolds(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	day := "2030-03-15"
	used := func() []string {
		t.Helper()
		got, err := s.MeasureLimits(ctx, "alice", []storage.Limit{
			{Budget: "search", Measure: storage.MeasureSpend, FromDay: day},
			{Budget: "acme", Measure: storage.MeasureSpend, FromDay: day},
		})
		require.NoError(t, err)
		return []string{got[0].StringFixed(4), got[1].StringFixed(4)}
	}
	begin := func(principal, tool, amount, key string, budgets ...string) storage.Begin {
		t.Helper()
		q := quoteFor(principal, tool, amount, t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := inBudgets(beginFor(q, key, t0), day, budgets...)
		b.ToolSlug = q.ToolSlug
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		return b
	}

	done := begin("alice", "tool-a", "1.00", "done", "search", "acme")
	failed := begin("bob", "tool-a", "2.00", "failed", "search", "acme")
	amb := begin("alice", "tool-b", "4.00", "ambiguous", "search", "acme")
	begin("dave", "tool-a", "8.00", "org-only", "acme")
	assert.Equal(t, []string{"7.0000", "15.0000"}, used(), "running calls hold their amounts")

	require.NoError(t, s.FinishExecution(ctx, finishFor(done, storage.ExecutionCompleted, "{}", t0)))
	require.NoError(t, s.FinishExecution(ctx, finishFor(failed, storage.ExecutionFailed, "{}", t0)))
	require.NoError(t, s.FinishExecution(ctx, finishFor(amb, storage.ExecutionAmbiguous, "{}", t0)))
	assert.Equal(t, []string{"5.0000", "13.0000"}, used(), "the failed call gave back, the ambiguous one holds")

	e, err := s.GetExecution(ctx, amb.ExecutionID)
	require.NoError(t, err)
	assert.Equal(t, amb.Budgets, e.Budgets, "the execution says where it counts")

	_, err = s.ResolveExecution(ctx, storage.Resolve{ExecutionID: amb.ExecutionID, Outcome: storage.ExecutionCompleted,
		ResolvedBy: "pat", Response: []byte("{}"), Now: t0.Add(time.Minute)})
	require.NoError(t, err)
	assert.Equal(t, []string{"5.0000", "13.0000"}, used(), "resolved completed: charged, still counted")

	summary := func(budget string, by toolgatetype.SpendGrouping) map[string]string {
		t.Helper()
		groups, err := s.SpendSummary(ctx, storage.SpendQuery{Budget: budget, GroupBy: by, FromDay: day, UntilDay: "2030-03-16"})
		require.NoError(t, err)
		out := map[string]string{}
		for _, g := range groups {
			out[g.Key] = fmt.Sprintf("%s x%d", g.TotalUSD.StringFixed(4), g.Count)
		}
		return out
	}
	assert.Equal(t, map[string]string{"alice": "5.0000 x2"}, summary("search", toolgatetype.SpendByPrincipal))
	assert.Equal(t, map[string]string{"slug-tool-a": "1.0000 x1", "slug-tool-b": "4.0000 x1"}, summary("search", toolgatetype.SpendByTool))
	assert.Equal(t, map[string]string{day: "5.0000 x2"}, summary("acme", toolgatetype.SpendByDay),
		"the running call of dave is not charged yet")
	groups, err := s.SpendSummary(ctx, storage.SpendQuery{Budget: "search", GroupBy: toolgatetype.SpendByDay, FromDay: "2030-03-16"})
	require.NoError(t, err)
	assert.Empty(t, groups, "no charged call on a later day")
}

// TestBudgetInputRefused: what the budgets' tables could not count right
// is refused with an error that says what, and writes nothing.
func TestBudgetInputRefused(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	cases := []struct {
		name    string
		budgets []storage.BudgetDay
		limit   *storage.Limit
		want    string
	}{
		{"a budget named twice", []storage.BudgetDay{{Budget: "team", Day: "2030-03-15"}, {Budget: "team", Day: "2030-03-15"}}, nil, `"team" is named twice`},
		{"a budget with no id", []storage.BudgetDay{{Day: "2030-03-15"}}, nil, "has no id"},
		{"a day that is no date", []storage.BudgetDay{{Budget: "team", Day: "15/03/2030"}}, nil, `day "15/03/2030" is not a date`},
		{"a day that does not exist", []storage.BudgetDay{{Budget: "team", Day: "2030-02-30"}}, nil, "is not a date"},
		{"a first day that is no date", nil, &storage.Limit{Budget: "team", Measure: storage.MeasureSpend, FromDay: "2030-3-1", Max: dec("1")}, `day "2030-3-1"`},
	}
	for i, tc := range cases {
		q := quoteFor("alice", "tool-a", "0.11", t0)
		require.NoError(t, s.CreateQuote(ctx, q))
		b := beginFor(q, fmt.Sprint("key-", i), t0)
		b.Budgets = tc.budgets
		if tc.limit != nil {
			b.Limits = []storage.Limit{*tc.limit}
		}
		_, err := s.BeginExecution(ctx, b)
		require.ErrorContains(t, err, tc.want, tc.name)
		_, err = s.GetIdempotency(ctx, "alice", b.Key)
		require.ErrorIs(t, err, storage.ErrNotFound, tc.name)
	}
	_, err := s.SpendSummary(ctx, storage.SpendQuery{Budget: "team", GroupBy: toolgatetype.SpendByDay, UntilDay: "tomorrow"})
	require.ErrorContains(t, err, `day "tomorrow" is not a date`)
}
