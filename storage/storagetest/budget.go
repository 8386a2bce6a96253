package storagetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// Budgets are counted by the days a gateway gives in Begin.Budgets, each in
// its budget's time zone; a store never converts a time itself. These
// fixed zones stand for real ones in winter, so the days below are plain
// arithmetic, with no zone database needed.
var (
	berlin     = time.FixedZone("UTC+1", 1*60*60)   // Europe/Berlin in winter
	newYork    = time.FixedZone("UTC-5", -5*60*60)  // America/New_York in winter
	kiritimati = time.FixedZone("UTC+14", 14*60*60) // Pacific/Kiritimati, the first to see a new day
)

// today is t0's day in UTC, the day of a budget that keeps UTC.
const today = "2030-03-15"

// dayIn is at's calendar day in zone, as a gateway computes a BudgetDay.
func dayIn(at time.Time, zone *time.Location) string { return at.In(zone).Format(time.DateOnly) }

// utcDays are the BudgetDays of a call at at counting in budgets that all
// keep UTC.
func utcDays(at time.Time, budgets ...string) []storage.BudgetDay {
	out := make([]storage.BudgetDay, len(budgets))
	for i, id := range budgets {
		out[i] = storage.BudgetDay{Budget: id, Day: dayIn(at, time.UTC)}
	}
	return out
}

// budgetSpend is a budget's spend limit over the days from fromDay on
// (all of them when empty), on toolID alone when set.
func budgetSpend(budget, toolID, fromDay, max string) storage.Limit {
	return storage.Limit{Budget: budget, ToolID: toolID, Measure: storage.MeasureSpend, FromDay: fromDay, Max: dec(max)}
}

// budgetCalls is a budget's limit on the calls begun since since.
func budgetCalls(budget, toolID string, since time.Time, max string) storage.Limit {
	return storage.Limit{Budget: budget, ToolID: toolID, Measure: storage.MeasureCalls, Since: since, Max: dec(max)}
}

// admitIn quotes and begins one call counting in days, under limits.
func (h *harness) admitIn(principal, toolID, total, key string, at time.Time, days []storage.BudgetDay, limits ...storage.Limit) storage.Begin {
	h.t.Helper()
	b := beginFor(h.quote(principal, toolID, total, at), key, at, limits...)
	b.Budgets = days
	h.begin(b)
	return b
}

// callIn admits a call counting in days and finishes it with status, a
// second later.
func (h *harness) callIn(principal, toolID, total, key string, status storage.ExecutionStatus, at time.Time, days []storage.BudgetDay) storage.Begin {
	h.t.Helper()
	b := h.admitIn(principal, toolID, total, key, at, days)
	h.finish(b, status, `{"status":"`+string(status)+`"}`, at.Add(time.Second))
	return b
}

// assertBudgetUsed checks what a budget's limit has used. The principal
// MeasureLimits is given is one in no budget: a budget's limits count
// every member's calls, whoever asks.
func (h *harness) assertBudgetUsed(want string, l storage.Limit, msgAndArgs ...any) {
	h.t.Helper()
	assertDecimal(h.t, want, h.used("nobody", l), msgAndArgs...)
}

// refusal begins b, requires a *LimitError and returns its failures.
func (h *harness) refusal(b storage.Begin) []storage.LimitFailure {
	h.t.Helper()
	_, err := h.s.BeginExecution(h.ctx, b)
	var le *storage.LimitError
	require.ErrorAs(h.t, err, &le)
	return le.Failures
}

func testBudgets(t *testing.T, newStore newStoreFunc) {
	t.Run("ACallCountsInEveryBudgetItNames", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// team and other are children of org; a call names its budgets and
		// every ancestor, as the gateway does.
		h.callIn("alice", "tool-a", "1.00", "a", storage.ExecutionCompleted, t0.Add(-time.Hour), utcDays(t0, "team", "org"))
		h.admitIn("bob", "tool-a", "2.00", "b", t0.Add(-30*time.Minute), utcDays(t0, "team", "org"))
		h.callIn("carol", "tool-b", "4.00", "c", storage.ExecutionCompleted, t0.Add(-20*time.Minute), utcDays(t0, "other", "org"))
		h.call("dave", "tool-a", "8.00", "d", storage.ExecutionCompleted, t0.Add(-10*time.Minute)) // in no budget

		cases := []struct {
			name  string
			limit storage.Limit
			want  string
		}{
			{"team's spend, the running call held", budgetSpend("team", "", "", "0"), "3.00"},
			{"org's spend, both teams'", budgetSpend("org", "", "", "0"), "7.00"},
			{"other's spend", budgetSpend("other", "", "", "0"), "4.00"},
			{"a budget nobody counts in", budgetSpend("unknown", "", "", "0"), "0"},
			{"team's calls", budgetCalls("team", "", time.Time{}, "0"), "2"},
			{"org's calls", budgetCalls("org", "", time.Time{}, "0"), "3"},
			{"org's calls in the last 25 minutes", budgetCalls("org", "", t0.Add(-25*time.Minute), "0"), "1"},
			{"alice's own spend, unchanged by budgets", spendLimit("", time.Time{}, "0"), "1.00"},
		}
		limits := make([]storage.Limit, len(cases))
		for i, tc := range cases {
			limits[i] = tc.limit
		}
		// One call with every limit, so order is checked along with values;
		// alice asks, and a budget's limits do not look at who asks.
		got, err := h.s.MeasureLimits(h.ctx, "alice", limits)
		require.NoError(t, err)
		require.Len(t, got, len(cases))
		for i, tc := range cases {
			assertDecimal(t, tc.want, got[i], tc.name)
		}
		assertDecimal(t, "8.00", h.used("dave", spendLimit("", time.Time{}, "0")), "a principal's own limit still looks at the principal")
	})

	t.Run("NestedLimitsRefuseEachOnItsOwn", func(t *testing.T) {
		t.Parallel()
		// Before each case the team holds alice's 1.00 and the org that and
		// carol's 5.00 from another team.
		cases := []struct {
			name         string
			own, team    string // alice's own spend limit, the team's
			org          string
			wantFailures []int    // indexes into the limits own, team, org
			wantUsed     []string // Used of each failure
		}{
			{"the parent is short while the team has room", "100", "10.00", "6.50", []int{2}, []string{"6.00"}},
			{"the team is short while the parent has room", "100", "1.50", "100", []int{1}, []string{"1.00"}},
			{"every one is short", "1.50", "1.50", "6.50", []int{0, 1, 2}, []string{"1.00", "1.00", "6.00"}},
			{"each has room", "2.00", "2.00", "7.00", nil, nil},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				h.callIn("alice", "tool-a", "1.00", "h1", storage.ExecutionCompleted, t0.Add(-time.Hour), utcDays(t0, "team", "org"))
				h.callIn("carol", "tool-a", "5.00", "h2", storage.ExecutionCompleted, t0.Add(-time.Hour), utcDays(t0, "other", "org"))

				limits := []storage.Limit{
					spendLimit("", t0.Add(-24*time.Hour), tc.own),
					budgetSpend("team", "", today, tc.team),
					budgetSpend("org", "", today, tc.org),
				}
				q := h.quote("alice", "tool-a", "1.00", t0)
				b := beginFor(q, "key-1", t0, limits...)
				b.Budgets = utcDays(t0, "team", "org")
				if tc.wantFailures == nil {
					h.begin(b)
					h.assertBudgetUsed("2.00", budgetSpend("team", "", today, "0"), "team")
					h.assertBudgetUsed("7.00", budgetSpend("org", "", today, "0"), "org")
					return
				}

				failures := h.refusal(b)
				require.Len(t, failures, len(tc.wantFailures))
				for i, f := range failures {
					idx := tc.wantFailures[i]
					assert.Equal(t, idx, f.Index, "failure %d", i)
					assert.Equal(t, limits[idx].Budget, f.Limit.Budget, "failure %d names its budget", i)
					assert.Equal(t, limits[idx].FromDay, f.Limit.FromDay, "failure %d", i)
					assertDecimal(t, limits[idx].Max.String(), f.Limit.Max, "failure %d Max", i)
					assertDecimal(t, tc.wantUsed[i], f.Used, "failure %d Used", i)
				}

				// Nothing was written, on any budget.
				h.assertKeyFree("alice", "key-1")
				h.assertQuoteOpen(q.ID)
				h.assertUsed("alice", "1.00", "1")
				h.assertBudgetUsed("1.00", budgetSpend("team", "", today, "0"), "team")
				h.assertBudgetUsed("6.00", budgetSpend("org", "", today, "0"), "org")
				h.assertBudgetUsed("1", budgetCalls("team", "", time.Time{}, "0"), "team's calls")
			})
		}
	})

	t.Run("ToolLimitsCountThatToolAlone", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.callIn("alice", "tool-a", "1.00", "a", storage.ExecutionCompleted, t0.Add(-time.Hour), utcDays(t0, "team"))
		h.callIn("bob", "tool-b", "2.00", "b", storage.ExecutionCompleted, t0.Add(-time.Hour), utcDays(t0, "team"))
		h.callIn("carol", "tool-a", "4.00", "c", storage.ExecutionCompleted, t0.Add(-time.Hour), utcDays(t0, "other"))

		h.assertBudgetUsed("1.00", budgetSpend("team", "tool-a", today, "0"), "team on tool-a")
		h.assertBudgetUsed("2.00", budgetSpend("team", "tool-b", today, "0"), "team on tool-b")
		h.assertBudgetUsed("0", budgetSpend("team", "tool-c", today, "0"), "team on a tool nobody called")
		h.assertBudgetUsed("3.00", budgetSpend("team", "", today, "0"), "team on every tool")
		h.assertBudgetUsed("1", budgetCalls("team", "tool-a", time.Time{}, "0"), "team's calls of tool-a")

		// bob's next call of tool-a fits the team's tool-a limit, whatever
		// the team spent on tool-b, and not once the tool is short.
		short := beginFor(h.quote("bob", "tool-a", "1.00", t0), "k1", t0, budgetSpend("team", "tool-a", today, "1.50"))
		short.Budgets = utcDays(t0, "team")
		failures := h.refusal(short)
		require.Len(t, failures, 1)
		assert.Equal(t, "tool-a", failures[0].Limit.ToolID)
		assertDecimal(t, "1.00", failures[0].Used)

		fits := beginFor(h.quote("bob", "tool-a", "1.00", t0), "k2", t0, budgetSpend("team", "tool-a", today, "2.00"))
		fits.Budgets = utcDays(t0, "team")
		h.begin(fits)
		h.assertBudgetUsed("2.00", budgetSpend("team", "tool-a", today, "0"), "team on tool-a after")
	})

	t.Run("SpendCountsTheBudgetsDaysFromFromDay", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// A budget in Berlin (UTC+1). 2030-03-11 is a Monday; each pair of
		// calls straddles one of its midnights, an hour before UTC's, so
		// the later call of each pair is on Berlin's next day while still
		// on UTC's earlier one.
		berlinCalls := []struct {
			at     time.Time
			amount string
		}{
			{time.Date(2030, time.February, 28, 22, 30, 0, 0, time.UTC), "1.00"}, // 2030-02-28, last month
			{time.Date(2030, time.February, 28, 23, 30, 0, 0, time.UTC), "2.00"}, // 2030-03-01, this month
			{time.Date(2030, time.March, 10, 22, 30, 0, 0, time.UTC), "4.00"},    // Sunday 2030-03-10, last week
			{time.Date(2030, time.March, 10, 23, 30, 0, 0, time.UTC), "8.00"},    // Monday 2030-03-11, this week
			{time.Date(2030, time.March, 14, 22, 59, 59, 0, time.UTC), "16.00"},  // 2030-03-14, yesterday
			{time.Date(2030, time.March, 14, 23, 0, 0, 0, time.UTC), "32.00"},    // 2030-03-15, today
		}
		for i, c := range berlinCalls {
			days := []storage.BudgetDay{{Budget: "berlin", Day: dayIn(c.at, berlin)}}
			h.callIn(fmt.Sprint("member-", i), "tool-a", c.amount, "k", storage.ExecutionCompleted, c.at, days)
		}
		// A budget in New York (UTC-5): its March begins five hours after UTC's.
		for i, at := range []time.Time{
			time.Date(2030, time.March, 1, 3, 0, 0, 0, time.UTC), // 2030-02-28 there
			time.Date(2030, time.March, 1, 5, 0, 0, 0, time.UTC), // 2030-03-01 there
		} {
			days := []storage.BudgetDay{{Budget: "new-york", Day: dayIn(at, newYork)}}
			h.callIn(fmt.Sprint("ny-", i), "tool-a", fmt.Sprint(i+1), "k", storage.ExecutionCompleted, at, days)
		}

		h.assertBudgetUsed("32.00", budgetSpend("berlin", "", "2030-03-15", "0"), "Berlin's day")
		h.assertBudgetUsed("56.00", budgetSpend("berlin", "", "2030-03-11", "0"), "Berlin's ISO week")
		h.assertBudgetUsed("62.00", budgetSpend("berlin", "", "2030-03-01", "0"), "Berlin's month")
		h.assertBudgetUsed("63.00", budgetSpend("berlin", "", "", "0"), "every day")
		h.assertBudgetUsed("0", budgetSpend("berlin", "", "2030-03-16", "0"), "tomorrow")
		h.assertBudgetUsed("2", budgetSpend("new-york", "", "2030-03-01", "0"), "New York's month")

		// Since is not looked at: the days alone say what a spend limit counts.
		sinceNow := budgetSpend("berlin", "", "2030-03-15", "0")
		sinceNow.Since = t0
		h.assertBudgetUsed("32.00", sinceNow, "Berlin's day, Since set to now")

		// Admission counts the same days.
		b := beginFor(h.quote("member-9", "tool-a", "1.00", t0), "k", t0,
			budgetSpend("berlin", "", "2030-03-11", "100"),
			budgetSpend("berlin", "", "2030-03-15", "32.50"),
		)
		b.Budgets = []storage.BudgetDay{{Budget: "berlin", Day: dayIn(t0, berlin)}}
		failures := h.refusal(b)
		require.Len(t, failures, 1)
		assert.Equal(t, 1, failures[0].Index)
		assertDecimal(t, "32.00", failures[0].Used, "Berlin's day before the call")
		b.Limits[1] = budgetSpend("berlin", "", "2030-03-15", "33.00")
		h.begin(b)
		h.assertBudgetUsed("33.00", budgetSpend("berlin", "", "2030-03-15", "0"), "Berlin's day after the call")
	})

	t.Run("CallsLimitCountsEveryOutcomeSinceSince", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		team := func(at time.Time) []storage.BudgetDay { return utcDays(at, "team", "org") }
		h.callIn("alice", "tool-a", "0.10", "a", storage.ExecutionCompleted, t0.Add(-90*time.Second), team(t0))
		h.callIn("bob", "tool-a", "0.10", "b", storage.ExecutionFailed, t0.Add(-50*time.Second), team(t0))
		h.admitIn("carol", "tool-a", "0.10", "c", t0.Add(-40*time.Second), team(t0))
		h.call("alice", "tool-a", "0.10", "x", storage.ExecutionCompleted, t0.Add(-30*time.Second)) // in no budget
		ambiguous := h.admitIn("dave", "tool-b", "0.10", "d", t0.Add(-20*time.Second), team(t0))
		h.finish(ambiguous, storage.ExecutionAmbiguous, ambiguousBody, t0.Add(-19*time.Second))
		h.callIn("erin", "tool-a", "0.10", "e", storage.ExecutionCompleted, t0.Add(-10*time.Second), utcDays(t0, "other", "org"))

		lastMinute := t0.Add(-time.Minute)
		h.assertBudgetUsed("3", budgetCalls("team", "", lastMinute, "0"), "failed, running and ambiguous all count")
		h.assertBudgetUsed("4", budgetCalls("team", "", t0.Add(-2*time.Minute), "0"), "two minutes")
		h.assertBudgetUsed("1", budgetCalls("team", "tool-b", lastMinute, "0"), "tool-b alone")
		h.assertBudgetUsed("4", budgetCalls("org", "", lastMinute, "0"), "the org counts erin's too")
		h.assertBudgetUsed("3", budgetCalls("team", "", t0.Add(-50*time.Second), "0"), "Since is inclusive")

		cases := []struct {
			name   string
			limit  storage.Limit
			used   string
			oldest time.Time
		}{
			{"team per minute", budgetCalls("team", "", lastMinute, "3"), "3", t0.Add(-50 * time.Second)},
			{"team per two minutes", budgetCalls("team", "", t0.Add(-2*time.Minute), "4"), "4", t0.Add(-90 * time.Second)},
			{"org per minute", budgetCalls("org", "", lastMinute, "4"), "4", t0.Add(-50 * time.Second)},
		}
		for i, tc := range cases {
			b := beginFor(h.quote("alice", "tool-a", "0.10", t0), fmt.Sprint("refused-", i), t0, tc.limit)
			b.Budgets = team(t0)
			failures := h.refusal(b)
			require.Len(t, failures, 1, tc.name)
			assertDecimal(t, tc.used, failures[0].Used, tc.name)
			assertTime(t, tc.oldest, failures[0].Oldest, tc.name)
		}

		b := beginFor(h.quote("alice", "tool-a", "0.10", t0), "admitted", t0, budgetCalls("team", "", lastMinute, "4"))
		b.Budgets = team(t0)
		h.begin(b)
		h.assertBudgetUsed("4", budgetCalls("team", "", lastMinute, "0"), "after the admitted call")
	})

	t.Run("OutcomesGiveBackOrHoldOnEveryBudget", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name string
			// settle takes the admitted call to its outcome.
			settle func(h *harness, b storage.Begin)
			held   string // what each budget's spend counts after
		}{
			{"running holds", func(*harness, storage.Begin) {}, "0.50"},
			{"completed charges", func(h *harness, b storage.Begin) {
				h.finish(b, storage.ExecutionCompleted, `{}`, t0.Add(time.Second))
			}, "0.50"},
			{"failed gives back", func(h *harness, b storage.Begin) {
				h.finish(b, storage.ExecutionFailed, `{}`, t0.Add(time.Second))
			}, "0"},
			{"ambiguous holds", func(h *harness, b storage.Begin) {
				h.finish(b, storage.ExecutionAmbiguous, ambiguousBody, t0.Add(time.Second))
			}, "0.50"},
			{"ambiguous resolved completed charges", func(h *harness, b storage.Begin) {
				h.finish(b, storage.ExecutionAmbiguous, ambiguousBody, t0.Add(time.Second))
				h.resolve(resolveFor(b.ExecutionID, storage.ExecutionCompleted, "pat", t0.Add(time.Minute)))
			}, "0.50"},
			{"ambiguous resolved failed gives back", func(h *harness, b storage.Begin) {
				h.finish(b, storage.ExecutionAmbiguous, ambiguousBody, t0.Add(time.Second))
				h.resolve(resolveFor(b.ExecutionID, storage.ExecutionFailed, "pat", t0.Add(time.Minute)))
			}, "0"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				b := h.admitIn("alice", "tool-a", "0.50", "k", t0, utcDays(t0, "team", "org"))
				tc.settle(h, b)
				for _, budget := range []string{"team", "org"} {
					h.assertBudgetUsed(tc.held, budgetSpend(budget, "", today, "0"), "%s's spend", budget)
					h.assertBudgetUsed(tc.held, budgetSpend(budget, "tool-a", today, "0"), "%s's spend on the tool", budget)
					h.assertBudgetUsed("1", budgetCalls(budget, "", time.Time{}, "0"), "%s's calls, whatever the outcome", budget)
				}

				// What is held or charged leaves that much less room on each.
				next := beginFor(h.quote("bob", "tool-a", "0.50", t0), "next", t0.Add(2*time.Minute),
					budgetSpend("team", "", today, "0.50"), budgetSpend("org", "", today, "0.50"))
				next.Budgets = utcDays(t0, "team", "org")
				if tc.held == "0" {
					h.begin(next)
					return
				}
				failures := h.refusal(next)
				require.Len(t, failures, 2)
				assert.Equal(t, 0, failures[0].Index)
				assert.Equal(t, 1, failures[1].Index)
			})
		}
	})

	t.Run("TakeoverCountsNothingTwice", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		first := beginFor(q, "key-1", t0)
		first.Budgets = utcDays(t0, "team", "org")
		h.begin(first)

		// Limits the call's own reservation fills are not checked again.
		at := first.LeaseUntil.Add(time.Second)
		retry := beginFor(q, "key-1", at,
			budgetSpend("team", "", today, "0.11"),
			budgetCalls("org", "", time.Time{}, "1"),
		)
		retry.Budgets = first.Budgets
		res := h.begin(retry)
		require.True(t, res.TookOver)
		for _, budget := range []string{"team", "org"} {
			h.assertBudgetUsed("0.11", budgetSpend(budget, "", today, "0"), "%s's spend, held once", budget)
			h.assertBudgetUsed("1", budgetCalls(budget, "", time.Time{}, "0"), "%s's calls", budget)
		}

		taker := finishFor(first, storage.ExecutionCompleted, `{}`, at.Add(time.Second))
		taker.LeaseToken = retry.LeaseToken
		require.NoError(t, h.s.FinishExecution(h.ctx, taker))
		for _, budget := range []string{"team", "org"} {
			h.assertBudgetUsed("0.11", budgetSpend(budget, "", today, "0"), "%s's spend, charged once", budget)
		}
	})

	t.Run("ExecutionKeepsItsBudgets", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// The team keeps Kiritimati's time, already on the next day; the
		// org keeps UTC's. The order is the gateway's: nearest first.
		days := []storage.BudgetDay{
			{Budget: "team", Day: dayIn(t0, kiritimati)},
			{Budget: "org", Day: dayIn(t0, time.UTC)},
		}
		require.Equal(t, "2030-03-16", days[0].Day)
		b := beginFor(h.quote("alice", "tool-a", "0.11", t0), "k1", t0)
		b.Budgets = days
		res := h.begin(b)
		assert.Equal(t, days, res.Execution.Budgets, "as begun")
		assert.Equal(t, days, h.get(b.ExecutionID).Budgets, "read back while running")
		// What the store was given and what it gave back are the caller's
		// to change.
		days = slices.Clone(days)
		b.Budgets[0].Day = "2030-01-01"
		res.Execution.Budgets[1].Day = "2030-01-01"
		assert.Equal(t, days, h.get(b.ExecutionID).Budgets, "read back after the caller changed its copies")

		h.finish(b, storage.ExecutionCompleted, `{}`, t0.Add(time.Second))
		none := h.call("alice", "tool-a", "0.11", "k2", storage.ExecutionCompleted, t0.Add(time.Minute))
		assert.Equal(t, days, h.get(b.ExecutionID).Budgets, "read back finished")
		assert.Empty(t, h.get(none.ExecutionID).Budgets, "a call in no budget")

		listed := h.list(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: anyPage})
		require.Len(t, listed, 2)
		assert.Empty(t, listed[0].Budgets, "listed, a call in no budget")
		assert.Equal(t, days, listed[1].Budgets, "listed")
	})

	t.Run("ConcurrentAdmissionsNeverOverspendABudget", func(t *testing.T) {
		t.Parallel()
		const racers = 50
		cases := []struct {
			name    string
			team    storage.Limit
			org     storage.Limit
			binding int // index of the limit every loser fails: 1 the team's, 2 the org's
			winners int
		}{
			// The org holds 1.00 of another team's before the race.
			{"the team's limit binds", budgetSpend("team", "", today, "2.00"), budgetSpend("org", "", today, "100"), 1, 20},
			{"the org's limit binds", budgetSpend("team", "", today, "100"), budgetSpend("org", "", today, "2.00"), 2, 10},
			{"the team's rate binds", budgetCalls("team", "", t0.Add(-time.Minute), "7"), budgetSpend("org", "", today, "100"), 1, 7},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				h.callIn("carol", "tool-a", "1.00", "c", storage.ExecutionCompleted, t0.Add(-time.Hour), utcDays(t0, "other", "org"))

				begins := make([]storage.Begin, racers)
				for i := range begins {
					// Five members share the team; each has room of their own.
					principal := fmt.Sprint("member-", i%5)
					q := h.quote(principal, "tool-a", "0.10", t0)
					begins[i] = beginFor(q, fmt.Sprint("key-", i), t0, spendLimit("", t0.Add(-time.Hour), "100"), tc.team, tc.org)
					begins[i].Budgets = utcDays(t0, "team", "org")
				}
				errs := make([]error, racers)
				race(racers, func(i int) {
					_, errs[i] = h.s.BeginExecution(h.ctx, begins[i])
				})

				winners := 0
				for i, err := range errs {
					if err == nil {
						winners++
						continue
					}
					var le *storage.LimitError
					if assert.ErrorAs(t, err, &le, "racer %d", i) && assert.Len(t, le.Failures, 1, "racer %d", i) {
						assert.Equal(t, tc.binding, le.Failures[0].Index, "racer %d", i)
					}
				}
				assert.Equal(t, tc.winners, winners)
				spent := dec("0.10").Mul(dec(fmt.Sprint(winners)))
				h.assertBudgetUsed(spent.String(), budgetSpend("team", "", today, "0"), "team after the race")
				h.assertBudgetUsed(spent.Add(dec("1.00")).String(), budgetSpend("org", "", today, "0"), "org after the race")
				h.assertBudgetUsed(fmt.Sprint(winners), budgetCalls("team", "", time.Time{}, "0"), "team's calls")
			})
		}
	})
}
