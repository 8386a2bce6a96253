package toolgate_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A fleet is n gateway instances' stores over one shared state: one
// memory store in one process, Stores with connections of their own on
// one SQLite file, or on one PostgreSQL schema (skipped without a server).
var fleets = []struct {
	name   string
	stores func(t *testing.T, n int) []storage.Store
}{
	{"memory", func(t *testing.T, n int) []storage.Store {
		s := memory.New()
		out := make([]storage.Store, n)
		for i := range out {
			out[i] = s
		}
		return out
	}},
	{"sqlite", func(t *testing.T, n int) []storage.Store {
		path := filepath.Join(t.TempDir(), "toolgate.db")
		out := make([]storage.Store, n)
		for i := range out {
			s, err := sqlite.Open(t.Context(), path, nil)
			require.NoError(t, err)
			t.Cleanup(func() { s.Close() })
			out[i] = s
		}
		return out
	}},
	{"postgres", postgresInstances},
}

// postgresInstances opens n Stores, each on a pool of its own, over one new
// schema dropped when the test ends.
func postgresInstances(t *testing.T, n int) []storage.Store {
	t.Helper()
	const urlEnv = "TOOLGATE_TEST_POSTGRES_URL"
	url := os.Getenv(urlEnv)
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the PostgreSQL tests", urlEnv)
		}
		t.Skipf("%s is not set; skipping the PostgreSQL fleet", urlEnv)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := pgx.Identifier{"toolgate_test_alerts_" + hex.EncodeToString(b[:])}
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	require.NoError(t, exec("CREATE SCHEMA "+schema.Sanitize()))
	t.Cleanup(func() {
		if err := exec("DROP SCHEMA IF EXISTS " + schema.Sanitize() + " CASCADE"); err != nil {
			t.Error(err)
		}
	})
	out := make([]storage.Store, n)
	for i := range out {
		s, err := postgres.Open(t.Context(), url, &postgres.Config{Schema: schema[0]})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		out[i] = s
	}
	return out
}

// Three gateway instances, each with its own webhook sender, charging one
// team's budget at once, send each crossing once, and each exports the
// whole fleet's use.
func TestBudgetAlertsOnceAcrossAFleet(t *testing.T) {
	t.Parallel()
	for _, f := range fleets {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			hooks := newHookReceiver(t)
			var (
				fleet []*env
				regs  []*prometheus.Registry
			)
			for _, store := range f.stores(t, 3) {
				s, reg := hooks.sender(t), prometheus.NewRegistry()
				regs = append(regs, reg)
				fleet = append(fleet, newEnvWithStore(t, store, []toolSpec{pricedAt("1.0000")}, withBudgets(s, searchTeam()),
					func(c *toolgate.Config) { c.Metrics = reg }))
			}

			var (
				wg        sync.WaitGroup
				mu        sync.Mutex
				completed int
			)
			for i, e := range fleet {
				for w := range 4 {
					principal := []string{"alice", "bob"}[w%2]
					wg.Go(func() {
						for n := 0; ; n++ {
							q, err := e.gw.Quote(context.Background(), principal, "paid")
							if !assert.NoError(t, err) {
								return
							}
							req := toolgatetest.ApprovedRequest(q, `{"v":"x"}`, fmt.Sprintf("fleet-%d-%d-%d", i, w, n))
							res, err := e.gw.Call(context.Background(), principal, req)
							var te *toolgatetype.Error
							if errors.As(err, &te) && te.Code == toolgatetype.CodeSpendLimitExceeded {
								return
							}
							if !assert.NoError(t, err) || !assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status) {
								return
							}
							mu.Lock()
							completed++
							mu.Unlock()
						}
					})
				}
			}
			wg.Wait()
			require.Equal(t, 10, completed, "the budget admits $10 across the fleet")
			for _, e := range fleet {
				e.gw.WaitBudgetAlerts()
			}
			got := hooks.settled(t, fleet[0].gw)
			ids := map[string]int{}
			for _, h := range got {
				ids[h.ID]++
			}
			assert.Equal(t, map[string]int{
				"budget.threshold:search-team:daily:0.5:2026-03-14": 1,
				"budget.threshold:search-team:daily:0.8:2026-03-14": 1,
				"budget.threshold:search-team:daily:1:2026-03-14":   1,
			}, ids, "each crossing once, whichever instance saw it")
			for _, h := range got {
				// Whoever saw a crossing first, its use had reached it.
				assert.Equal(t, toolgatetype.BudgetThresholdCrossed, h.Type)
				used := decimalOf(t, h.Data.UsedUSD)
				assert.GreaterOrEqual(t, used, 10*h.Data.Fraction, "%s", h.ID)
			}

			for i, reg := range regs {
				fleet[i].clock.Advance(10 * time.Second)
				series := budgetSeries(t, reg)
				assert.Equal(t, 10.0, series["toolgate_budget_used_usd"]["search-team/daily"], "instance %d shows the fleet's use", i)
				assert.Equal(t, 10.0, series["toolgate_budget_limit_usd"]["search-team/daily"])
			}
		})
	}
}

// decimalOf is a USD amount as a float, for comparing.
func decimalOf(t *testing.T, usd string) float64 {
	t.Helper()
	d, err := decimal.NewFromString(usd)
	require.NoError(t, err)
	return d.InexactFloat64()
}
