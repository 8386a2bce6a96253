package toolgate_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage/postgres"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/webhook"
)

// postgresInstances opens n Stores, each on a pool of its own, over one new
// schema dropped when the test ends: n gateway processes' view of one
// database. The test is skipped without a server to run on.
func postgresInstances(t *testing.T, n int) []*postgres.Store {
	t.Helper()
	const urlEnv = "TOOLGATE_TEST_POSTGRES_URL"
	url := os.Getenv(urlEnv)
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set; CI must run the PostgreSQL tests", urlEnv)
		}
		t.Skipf("%s is not set; skipping the PostgreSQL fleet tests", urlEnv)
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
	stores := make([]*postgres.Store, n)
	for i := range stores {
		s, err := postgres.Open(t.Context(), url, &postgres.Config{Schema: schema[0]})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		stores[i] = s
	}
	return stores
}

// On PostgreSQL, three gateway instances with a store each, charging one
// team's budget at once, send each crossing once, and each exports the
// whole fleet's use.
func TestBudgetAlertsOnceAcrossAPostgresFleet(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	var (
		senders []*webhook.Sender
		fleet   []*env
		regs    []*prometheus.Registry
	)
	for _, store := range postgresInstances(t, 3) {
		s, reg := hooks.sender(t), prometheus.NewRegistry()
		senders, regs = append(senders, s), append(regs, reg)
		fleet = append(fleet, newEnvWithStore(t, store, []toolSpec{pricedAt("1.0000")}, withBudgets(s, searchTeam()),
			func(c *toolgate.Config) { c.Metrics = reg }))
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	var completed int
	for i, e := range fleet {
		for w := range 4 {
			principal := []string{"alice", "bob"}[w%2]
			wg.Go(func() {
				for n := 0; ; n++ {
					q, err := e.gw.Quote(context.Background(), principal, "paid")
					if !assert.NoError(t, err) {
						return
					}
					req := toolgatetest.ApprovedRequest(q, `{"v":"x"}`, fmt.Sprintf("pg-fleet-%d-%d-%d", i, w, n))
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
	got := hooks.settled(t, senders...)
	ids := map[string]int{}
	for _, h := range got {
		ids[h.ID]++
	}
	assert.Equal(t, map[string]int{
		"budget.threshold:search-team:daily:0.5:2026-03-14": 1,
		"budget.threshold:search-team:daily:0.8:2026-03-14": 1,
		"budget.threshold:search-team:daily:1:2026-03-14":   1,
	}, ids, "each crossing once, whichever instance saw it")

	for i, reg := range regs {
		fleet[i].clock.Advance(10 * time.Second)
		series := budgetSeries(t, reg)
		assert.Equal(t, 10.0, series["toolgate_budget_used_usd"]["search-team/daily"], "instance %d shows the fleet's use", i)
		assert.Equal(t, 10.0, series["toolgate_budget_limit_usd"]["search-team/daily"])
	}
}
