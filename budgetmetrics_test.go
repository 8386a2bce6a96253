package toolgate_test

import (
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// budgetSeries are the budget metrics' series by name and then by
// "budget/window", each series' labels checked to be those two alone.
func budgetSeries(t *testing.T, reg *prometheus.Registry) map[string]map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]map[string]float64{}
	for _, f := range families {
		name := f.GetName()
		if name != "toolgate_budget_used_usd" && name != "toolgate_budget_limit_usd" {
			continue
		}
		out[name] = map[string]float64{}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			var names []string
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
				names = append(names, l.GetName())
			}
			sort.Strings(names)
			require.Equal(t, []string{"budget", "window"}, names, "no label but the budget and the window")
			out[name][labels["budget"]+"/"+labels["window"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

// acmeAndSearch are an organization with a monthly limit and its search
// team with a day's and a month's.
func acmeAndSearch() []toolgatetype.BudgetDefinition {
	team := searchTeam()
	team.Parent = "acme"
	team.MonthlyLimitUSD = dec("100.0000")
	return []toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", MonthlyLimitUSD: dec("1000.0000")},
		team,
	}
}

func TestBudgetMetricsShowEachWindowsUseAndLimit(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEnv(t, []toolSpec{pricedAt("2.0000")}, withBudgets(nil, acmeAndSearch()...), func(c *toolgate.Config) {
		c.Metrics = reg
	})
	limits := map[string]float64{"acme/monthly": 1000, "search-team/daily": 10, "search-team/monthly": 100}
	assert.Equal(t, map[string]map[string]float64{
		"toolgate_budget_limit_usd": limits,
		"toolgate_budget_used_usd":  {"acme/monthly": 0, "search-team/daily": 0, "search-team/monthly": 0},
	}, budgetSeries(t, reg), "only the windows with a limit")

	e.charge("alice", "2.0000")
	e.clock.Advance(9 * time.Second)
	assert.Equal(t, 0.0, budgetSeries(t, reg)["toolgate_budget_used_usd"]["search-team/daily"],
		"a reading serves scrapes for 10 s")
	e.clock.Advance(time.Second)
	assert.Equal(t, map[string]map[string]float64{
		"toolgate_budget_limit_usd": limits,
		"toolgate_budget_used_usd":  {"acme/monthly": 2, "search-team/daily": 2, "search-team/monthly": 2},
	}, budgetSeries(t, reg), "the team's charge counts in its organization too")

	// A call in flight holds its amount: it is used, as GET /v1/budgets
	// shows it.
	arrived, release := make(chan struct{}), make(chan struct{})
	echo := e.upstream.Handler()
	e.upstream.HandleFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		echo.ServeHTTP(w, r)
	})
	q := e.quote("bob", "paid")
	var (
		res  *toolgatetype.CallResult
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		res, err = e.gw.Call(t.Context(), "bob", toolgatetest.ApprovedRequest(q, `{"v":"x"}`, "held"))
	}()
	<-arrived
	e.clock.Advance(10 * time.Second)
	used := budgetSeries(t, reg)["toolgate_budget_used_usd"]
	states, serr := e.gw.Budgets(t.Context())
	close(release)
	<-done
	toolgatetest.RequireCompleted(t, res, err, "2.0000")
	assert.Equal(t, 4.0, used["search-team/daily"])
	require.NoError(t, serr)
	assert.Equal(t, "4.0000", states[1].Windows[toolgatetype.BudgetDaily].UsedUSD, "the metric and the API agree")

	// The next day's window starts empty; the month's goes on.
	e.clock.Advance(24 * time.Hour)
	used = budgetSeries(t, reg)["toolgate_budget_used_usd"]
	assert.Equal(t, 0.0, used["search-team/daily"])
	assert.Equal(t, 4.0, used["search-team/monthly"])
}

func TestBudgetMetricsAreTheFleets(t *testing.T) {
	t.Parallel()
	store := memory.New()
	reg, other := prometheus.NewRegistry(), prometheus.NewRegistry()
	watching := newEnvWithStore(t, store, []toolSpec{pricedAt("2.0000")}, withBudgets(nil, acmeAndSearch()...), func(c *toolgate.Config) {
		c.Metrics = reg
	})
	spending := newEnvWithStore(t, store, []toolSpec{pricedAt("2.0000")}, withBudgets(nil, acmeAndSearch()...), func(c *toolgate.Config) {
		c.Metrics = other
	})
	// A third gateway on the first's registry shares its series rather
	// than failing to register.
	_ = toolgatetest.New(t, &toolgatetest.Options{Store: store, Config: &toolgate.Config{Budgets: acmeAndSearch(), Metrics: reg}})

	spending.charge("alice", "2.0000")
	spending.charge("bob", "2.0000")
	watching.clock.Advance(10 * time.Second)
	assert.Equal(t, 4.0, budgetSeries(t, reg)["toolgate_budget_used_usd"]["search-team/daily"],
		"an instance shows what the others spent")
}
