package storagetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetSpendOf sums a budget's charged spend and requires success.
func (h *harness) budgetSpendOf(q storage.SpendQuery) []storage.SpendGroup {
	h.t.Helper()
	got, err := h.s.SpendSummary(h.ctx, q)
	require.NoError(h.t, err)
	return got
}

func testBudgetSpend(t *testing.T, newStore newStoreFunc) {
	t.Run("SumsWhatWasChargedInTheBudget", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// The team keeps Berlin's time (UTC+1), the org UTC's; both are
		// recorded with every team call, so the org's spend includes the
		// team's.
		in := func(at time.Time, team string) []storage.BudgetDay {
			return []storage.BudgetDay{{Budget: team, Day: dayIn(at, berlin)}, {Budget: "org", Day: dayIn(at, time.UTC)}}
		}
		lateOn14 := time.Date(2030, time.March, 14, 22, 0, 0, 0, time.UTC)      // 2030-03-14 in Berlin
		lastHourOf14 := lateOn14.Add(90 * time.Minute)                          // 2030-03-15 in Berlin, 03-14 in UTC
		lastHourOf15 := time.Date(2030, time.March, 15, 23, 30, 0, 0, time.UTC) // 2030-03-16 in Berlin
		h.callIn("alice", "tool-a", "1.00", "a1", storage.ExecutionCompleted, lateOn14, in(lateOn14, "team"))
		h.callIn("alice", "tool-a", "2.00", "a2", storage.ExecutionCompleted, lastHourOf14, in(lastHourOf14, "team"))
		h.callIn("bob", "tool-b", "4.00", "b1", storage.ExecutionCompleted, t0, in(t0, "team"))
		h.callIn("bob", "tool-b", "8.00", "b2", storage.ExecutionFailed, t0, in(t0, "team")) // given back
		h.admitIn("carol", "tool-a", "16.00", "c1", t0, in(t0, "team"))                      // held, not charged
		unsure := h.admitIn("dave", "tool-a", "32.00", "d1", t0, in(t0, "team"))
		h.finish(unsure, storage.ExecutionAmbiguous, ambiguousBody, t0.Add(time.Second)) // held, not charged
		h.callIn("erin", "tool-a", "64.00", "e1", storage.ExecutionCompleted, t0, in(t0, "other"))
		h.call("frank", "tool-a", "128.00", "f1", storage.ExecutionCompleted, t0) // in no budget
		h.callIn("alice", "tool-b", "0.50", "a3", storage.ExecutionCompleted, lastHourOf15, in(lastHourOf15, "team"))

		team := storage.SpendQuery{Budget: "team"}
		byDay, byPrincipal, byTool := team, team, team
		byDay.GroupBy = toolgatetype.SpendByDay
		byPrincipal.GroupBy = toolgatetype.SpendByPrincipal
		byTool.GroupBy = toolgatetype.SpendByTool
		assertGroups(t, []storage.SpendGroup{
			{Key: "2030-03-14", TotalUSD: dec("1.00"), Count: 1},
			{Key: "2030-03-15", TotalUSD: dec("6.00"), Count: 2},
			{Key: "2030-03-16", TotalUSD: dec("0.50"), Count: 1},
		}, h.budgetSpendOf(byDay))
		assertGroups(t, []storage.SpendGroup{
			{Key: "alice", TotalUSD: dec("3.50"), Count: 3},
			{Key: "bob", TotalUSD: dec("4.00"), Count: 1},
		}, h.budgetSpendOf(byPrincipal))
		assertGroups(t, []storage.SpendGroup{
			{Key: "slug-tool-a", TotalUSD: dec("3.00"), Count: 2},
			{Key: "slug-tool-b", TotalUSD: dec("4.50"), Count: 2},
		}, h.budgetSpendOf(byTool))

		// The org's days are UTC's, and it holds both teams' calls.
		orgByDay := storage.SpendQuery{Budget: "org", GroupBy: toolgatetype.SpendByDay}
		assertGroups(t, []storage.SpendGroup{
			{Key: "2030-03-14", TotalUSD: dec("3.00"), Count: 2},
			{Key: "2030-03-15", TotalUSD: dec("68.50"), Count: 3},
		}, h.budgetSpendOf(orgByDay))
		orgByPrincipal := storage.SpendQuery{Budget: "org", GroupBy: toolgatetype.SpendByPrincipal}
		assertGroups(t, []storage.SpendGroup{
			{Key: "alice", TotalUSD: dec("3.50"), Count: 3},
			{Key: "bob", TotalUSD: dec("4.00"), Count: 1},
			{Key: "erin", TotalUSD: dec("64.00"), Count: 1},
		}, h.budgetSpendOf(orgByPrincipal))

		// Days in [FromDay, UntilDay), either bound open when empty.
		bounded := byTool
		bounded.FromDay, bounded.UntilDay = "2030-03-15", "2030-03-16"
		assertGroups(t, []storage.SpendGroup{
			{Key: "slug-tool-a", TotalUSD: dec("2.00"), Count: 1},
			{Key: "slug-tool-b", TotalUSD: dec("4.00"), Count: 1},
		}, h.budgetSpendOf(bounded))
		from := byDay
		from.FromDay = "2030-03-15"
		assertGroups(t, []storage.SpendGroup{
			{Key: "2030-03-15", TotalUSD: dec("6.00"), Count: 2},
			{Key: "2030-03-16", TotalUSD: dec("0.50"), Count: 1},
		}, h.budgetSpendOf(from))
		until := byDay
		until.UntilDay = "2030-03-15"
		assertGroups(t, []storage.SpendGroup{{Key: "2030-03-14", TotalUSD: dec("1.00"), Count: 1}}, h.budgetSpendOf(until))

		// Principals, Since and Until are not looked at with a budget.
		ignored := byPrincipal
		ignored.Principals = []string{"frank"}
		ignored.Since, ignored.Until = t0.Add(24*time.Hour), t0.Add(48*time.Hour)
		assert.Len(t, h.budgetSpendOf(ignored), 2, "the team's two principals, not frank")

		assert.Empty(t, h.budgetSpendOf(storage.SpendQuery{Budget: "unknown", GroupBy: toolgatetype.SpendByDay}))

		// Once resolved as completed, the ambiguous call is charged: on its day.
		h.resolve(resolveFor(unsure.ExecutionID, storage.ExecutionCompleted, "pat", t0.Add(time.Hour)))
		assertGroups(t, []storage.SpendGroup{
			{Key: "alice", TotalUSD: dec("3.50"), Count: 3},
			{Key: "bob", TotalUSD: dec("4.00"), Count: 1},
			{Key: "dave", TotalUSD: dec("32.00"), Count: 1},
		}, h.budgetSpendOf(byPrincipal))
	})

	t.Run("KeptAfterTheExecutionIsPruned", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		at := t0.Add(-48 * time.Hour)
		b := h.callIn("alice", "tool-a", "1.00", "a1", storage.ExecutionCompleted, at, utcDays(at, "team", "org"))
		h.callIn("bob", "tool-b", "2.00", "b1", storage.ExecutionCompleted, t0, utcDays(t0, "team", "org"))

		res, err := h.s.Prune(h.ctx, storage.Prune{IdempotencyBefore: t0.Add(-24 * time.Hour), Limit: pruneAll})
		require.NoError(t, err)
		require.Equal(t, 1, res.Idempotency)
		_, err = h.s.GetExecution(h.ctx, b.ExecutionID)
		require.ErrorIs(t, err, storage.ErrNotFound)

		for _, budget := range []string{"team", "org"} {
			assertGroups(t, []storage.SpendGroup{
				{Key: "2030-03-13", TotalUSD: dec("1.00"), Count: 1},
				{Key: "2030-03-15", TotalUSD: dec("2.00"), Count: 1},
			}, h.budgetSpendOf(storage.SpendQuery{Budget: budget, GroupBy: toolgatetype.SpendByDay}))
			assertGroups(t, []storage.SpendGroup{
				{Key: "alice", TotalUSD: dec("1.00"), Count: 1},
				{Key: "bob", TotalUSD: dec("2.00"), Count: 1},
			}, h.budgetSpendOf(storage.SpendQuery{Budget: budget, GroupBy: toolgatetype.SpendByPrincipal}))
			assertGroups(t, []storage.SpendGroup{
				{Key: "slug-tool-a", TotalUSD: dec("1.00"), Count: 1},
				{Key: "slug-tool-b", TotalUSD: dec("2.00"), Count: 1},
			}, h.budgetSpendOf(storage.SpendQuery{Budget: budget, GroupBy: toolgatetype.SpendByTool}))
			h.assertBudgetUsed("3.00", budgetSpend(budget, "", "2030-03-01", "0"), "%s's month", budget)
		}
	})

	t.Run("PruneKeepsWhatWindowsCount", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// A budget in Kiritimati (UTC+14): its March began at 10:00 UTC on
		// February 28th, before the UTC month that Prune.LedgerBefore is
		// older than every window by.
		east := func(at time.Time) []storage.BudgetDay {
			return []storage.BudgetDay{{Budget: "east", Day: dayIn(at, kiritimati)}}
		}
		old := time.Date(2030, time.February, 10, 12, 0, 0, 0, time.UTC)       // 2030-02-11 there
		eastMarch := time.Date(2030, time.February, 28, 12, 0, 0, 0, time.UTC) // 2030-03-01 there
		require.Equal(t, "2030-03-01", dayIn(eastMarch, kiritimati))
		h.callIn("alice", "tool-a", "1.00", "old", storage.ExecutionCompleted, old, east(old))
		h.callIn("alice", "tool-a", "2.00", "march", storage.ExecutionCompleted, eastMarch, east(eastMarch))
		h.callIn("bob", "tool-a", "4.00", "now", storage.ExecutionCompleted, t0, east(t0))
		// A budget that keeps UTC: Prune keeps a day more than UTC's month
		// asks for, so that no zone's month is cut short.
		for _, at := range []time.Time{
			time.Date(2030, time.February, 27, 12, 0, 0, 0, time.UTC),
			time.Date(2030, time.February, 28, 12, 0, 0, 0, time.UTC),
		} {
			h.callIn("dave", "tool-a", "1.00", at.Format(time.DateOnly), storage.ExecutionCompleted, at, utcDays(at, "org"))
		}
		// A long call that began last month is still running at the prune.
		long := beginFor(h.quote("carol", "tool-a", "8.00", old), "long", old)
		long.Budgets = east(old)
		long.LeaseUntil = t0.Add(time.Hour)
		h.begin(long)

		monthStart := time.Date(t0.Year(), t0.Month(), 1, 0, 0, 0, 0, time.UTC)
		_, err := h.s.Prune(h.ctx, storage.Prune{
			IdempotencyBefore: t0.Add(-24 * time.Hour),
			LedgerBefore:      monthStart,
			Limit:             pruneAll,
		})
		require.NoError(t, err)

		h.assertBudgetUsed("6.00", budgetSpend("east", "", "2030-03-01", "0"), "east's month, begun before UTC's")
		byDay := storage.SpendQuery{Budget: "east", GroupBy: toolgatetype.SpendByDay, FromDay: "2030-03-01"}
		assertGroups(t, []storage.SpendGroup{
			{Key: "2030-03-01", TotalUSD: dec("2.00"), Count: 1},
			{Key: "2030-03-16", TotalUSD: dec("4.00"), Count: 1},
		}, h.budgetSpendOf(byDay))
		// Last month's charged history is gone, the prune having reached it.
		byDay.FromDay = ""
		assertGroups(t, []storage.SpendGroup{
			{Key: "2030-03-01", TotalUSD: dec("2.00"), Count: 1},
			{Key: "2030-03-16", TotalUSD: dec("4.00"), Count: 1},
		}, h.budgetSpendOf(byDay))

		// Of the UTC budget, the days before the one before LedgerBefore's go.
		assertGroups(t, []storage.SpendGroup{{Key: "2030-02-28", TotalUSD: dec("1.00"), Count: 1}},
			h.budgetSpendOf(storage.SpendQuery{Budget: "org", GroupBy: toolgatetype.SpendByDay}))

		// The long call can still report, and counts on its own day only.
		h.finish(long, storage.ExecutionCompleted, `{}`, t0)
		h.assertBudgetUsed("6.00", budgetSpend("east", "", "2030-03-01", "0"), "east's month after the long call")
	})
}
