package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetZones are the zones of the budgets of TestBudgetsMatchTheirCalls,
// fixed offsets from the furthest behind UTC to the furthest ahead.
var budgetZones = map[string]*time.Location{
	"utc":  time.UTC,
	"west": time.FixedZone("UTC-12", -12*60*60),
	"ny":   time.FixedZone("UTC-5", -5*60*60),
	"east": time.FixedZone("UTC+14", 14*60*60),
}

// budgetCall is one call of TestBudgetsMatchTheirCalls, as its test knows it.
type budgetCall struct {
	principal, tool string
	amount          decimal.Decimal
	at              time.Time
	days            []storage.BudgetDay
	outcome         string // running, completed, failed, ambiguous, resolved-completed, resolved-failed
}

// holds says whether the call's amount still counts in a spend limit.
func (c budgetCall) holds() bool {
	return c.outcome != "failed" && c.outcome != "resolved-failed"
}

// charged says whether the call is in a budget's spend summary.
func (c budgetCall) charged() bool {
	return c.outcome == "completed" || c.outcome == "resolved-completed"
}

// dayIn is the call's day in budget, "" when it does not count there.
func (c budgetCall) dayIn(budget string) string {
	for _, d := range c.days {
		if d.Budget == budget {
			return d.Day
		}
	}
	return ""
}

// TestBudgetsMatchTheirCalls holds what the budgets' tables answer (their
// limits' use and oldest call, their spend summaries) to plain sums over
// the calls they were given: random calls of several principals over four
// days, in budgets of four zones, taken by many writers at once (so the
// writes share commits) to every outcome, ambiguous ones resolved each
// way. Then again after the executions are pruned, which their history
// outlives.
func TestBudgetsMatchTheirCalls(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "toolgate.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	now := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	budgets := []string{"utc", "west", "ny", "east"}
	outcomes := []string{"running", "completed", "completed", "failed", "ambiguous", "resolved-completed", "resolved-failed"}

	calls := make([]budgetCall, 300)
	for i := range calls {
		c := budgetCall{
			principal: fmt.Sprint("member-", rng.IntN(5)),
			tool:      fmt.Sprint("tool-", rng.IntN(3)),
			amount:    decimal.New(rng.Int64N(100000), -4),
			at:        now.Add(-time.Duration(rng.Int64N(int64(96 * time.Hour)))),
			outcome:   outcomes[rng.IntN(len(outcomes))],
		}
		if rng.IntN(8) == 0 {
			c.at = c.at.Truncate(time.Hour) // on a zone's midnight, for some
		}
		for _, b := range budgets {
			if rng.IntN(3) > 0 {
				c.days = append(c.days, storage.BudgetDay{Budget: b, Day: c.at.In(budgetZones[b]).Format(dayLayout)})
			}
		}
		calls[i] = c
	}
	const writers = 16
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(calls); i += writers {
				assert.NoError(t, takeTo(s, calls[i], fmt.Sprint("key-", i)))
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())

	check := func(when string) {
		t.Helper()
		for n := range 200 {
			b := budgets[n%len(budgets)]
			l := storage.Limit{Budget: b, Measure: storage.MeasureSpend,
				FromDay: now.AddDate(0, 0, -rng.IntN(5)).In(budgetZones[b]).Format(dayLayout)}
			switch {
			case n%7 == 0:
				l.FromDay = ""
			case n%2 == 1:
				l.Measure = storage.MeasureCalls
				l.Since = now.Add(-time.Duration(rng.Int64N(int64(100 * time.Hour))))
			}
			if rng.IntN(2) == 0 {
				l.ToolID = fmt.Sprint("tool-", rng.IntN(4))
			}
			var (
				want       decimal.Decimal
				count      int64
				wantOldest time.Time
			)
			for _, c := range calls {
				day := c.dayIn(b)
				counted := day != "" && (l.ToolID == "" || c.tool == l.ToolID)
				if l.Measure == storage.MeasureSpend {
					counted = counted && day >= l.FromDay && c.holds()
				} else {
					counted = counted && !c.at.Before(l.Since)
				}
				if !counted {
					continue
				}
				want, count = want.Add(c.amount), count+1
				if wantOldest.IsZero() || c.at.Before(wantOldest) {
					wantOldest = c.at
				}
			}
			if l.Measure == storage.MeasureCalls {
				want = decimal.NewFromInt(count)
			}
			got, err := s.MeasureLimits(ctx, "nobody", []storage.Limit{l})
			require.NoError(t, err)
			require.Truef(t, want.Equal(got[0]), "%s: %+v: got %s, want %s", when, l, got[0], want)
			first, err := oldest(s.pool(ctx), "nobody", l)
			require.NoError(t, err)
			require.Truef(t, wantOldest.Equal(first), "%s: %+v: oldest %s, want %s", when, l, first, wantOldest)
		}
		for _, b := range budgets {
			for _, by := range []toolgatetype.SpendGrouping{toolgatetype.SpendByDay, toolgatetype.SpendByPrincipal, toolgatetype.SpendByTool} {
				from := now.AddDate(0, 0, -2).In(budgetZones[b]).Format(dayLayout)
				until := now.In(budgetZones[b]).Format(dayLayout)
				want := map[string]*storage.SpendGroup{}
				for _, c := range calls {
					day := c.dayIn(b)
					if day == "" || !c.charged() || day < from || day >= until {
						continue
					}
					key := map[toolgatetype.SpendGrouping]string{toolgatetype.SpendByDay: day,
						toolgatetype.SpendByPrincipal: c.principal, toolgatetype.SpendByTool: "slug-" + c.tool}[by]
					if want[key] == nil {
						want[key] = &storage.SpendGroup{Key: key, TotalUSD: decimal.Zero}
					}
					want[key].TotalUSD = want[key].TotalUSD.Add(c.amount)
					want[key].Count++
				}
				got, err := s.SpendSummary(ctx, storage.SpendQuery{Budget: b, GroupBy: by, FromDay: from, UntilDay: until})
				require.NoError(t, err)
				require.Len(t, got, len(want), "%s: %s by %s", when, b, by)
				require.True(t, slices.IsSortedFunc(got, func(x, y storage.SpendGroup) int { return strings.Compare(x.Key, y.Key) }))
				for _, g := range got {
					w := want[g.Key]
					require.NotNil(t, w, "%s: %s by %s: %s", when, b, by, g.Key)
					require.Truef(t, w.TotalUSD.Equal(g.TotalUSD) && w.Count == g.Count, "%s: %s by %s: %s: got %s x%d, want %s x%d",
						when, b, by, g.Key, g.TotalUSD, g.Count, w.TotalUSD, w.Count)
				}
			}
		}
	}
	check("after the calls")

	// A day of results goes; the budgets' history stays whole.
	res, err := s.Prune(ctx, storage.Prune{IdempotencyBefore: now.Add(time.Hour), Limit: 10 * len(calls)})
	require.NoError(t, err)
	require.Positive(t, res.Idempotency)
	check("after the executions' prune")
}

// takeTo quotes and admits c under key, then takes it to its outcome.
func takeTo(s *Store, c budgetCall, key string) error {
	ctx := context.Background()
	q := storage.Quote{ID: uuid.New(), Principal: c.principal, ToolID: c.tool, ToolSlug: "slug-" + c.tool, TotalUSD: c.amount,
		CreatedAt: c.at, ExpiresAt: c.at.Add(time.Hour), State: storage.QuoteOpen}
	if err := s.CreateQuote(ctx, q); err != nil {
		return err
	}
	b := storage.Begin{Principal: c.principal, Key: key, Fingerprint: "fp", QuoteID: q.ID, ExecutionID: uuid.New(),
		ToolID: c.tool, ToolSlug: q.ToolSlug, AmountUSD: c.amount, Budgets: c.days, LeaseToken: uuid.New(),
		LeaseUntil: c.at.Add(time.Minute), Now: c.at}
	if _, err := s.BeginExecution(ctx, b); err != nil || c.outcome == "running" {
		return err
	}
	f := storage.Finish{Principal: c.principal, Key: key, ExecutionID: b.ExecutionID, LeaseToken: b.LeaseToken,
		Status: storage.ExecutionStatus(c.outcome), Charged: c.outcome == "completed", Response: []byte("{}"), Now: c.at}
	resolved, ok := strings.CutPrefix(c.outcome, "resolved-")
	if ok {
		f.Status = storage.ExecutionAmbiguous
	}
	if err := s.FinishExecution(ctx, f); err != nil || !ok {
		return err
	}
	_, err := s.ResolveExecution(ctx, storage.Resolve{ExecutionID: b.ExecutionID, Outcome: storage.ExecutionStatus(resolved),
		ResolvedBy: "pat", Response: []byte("{}"), Now: c.at.Add(time.Second)})
	return err
}
