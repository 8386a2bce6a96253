package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budgetHooks is a webhook endpoint that keeps every delivery; the test
// checks their signatures and reads the budget.threshold ones.
type budgetHooks struct {
	mu  sync.Mutex
	got []hookDelivery
}

func (h *budgetHooks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.got = append(h.got, hookDelivery{header: r.Header.Clone(), body: body})
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// budgetHook is one budget.threshold event.
type budgetHook struct {
	id   string // the webhook-id header
	data map[string]any
}

// thresholds are the budget.threshold events received, each checked
// against its signature.
func (h *budgetHooks) thresholds(t *testing.T) []budgetHook {
	t.Helper()
	h.mu.Lock()
	got := slices.Clone(h.got)
	h.mu.Unlock()
	var out []budgetHook
	for _, d := range got {
		ev := d.event(t)
		if ev["type"] == "budget.threshold" {
			out = append(out, budgetHook{id: d.header.Get("webhook-id"), data: ev["data"].(map[string]any)})
		}
	}
	return out
}

// crossings are the crossings received, as "budget window fraction",
// sorted.
func (h *budgetHooks) crossings(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, g := range h.thresholds(t) {
		out = append(out, fmt.Sprintf("%s %s %v", g.data["budget"].(map[string]any)["id"], g.data["window"], g.data["fraction"]))
	}
	slices.Sort(out)
	return out
}

// TestServerFleetKeepsBudgets runs two server processes on one SQLite file
// and, when TOOLGATE_TEST_POSTGRES_URL names one, on one PostgreSQL
// database. Two teams of an organization, four principals with keys of
// their own, call a paid tool at once through both: no team spends past
// its daily limit, the organization not past its monthly one, what was
// admitted is exactly what was charged, and each threshold's webhook
// arrives once from the fleet. The organization's limit is a call short
// of the teams' together, so it binds too, and whatever the order the
// organization fills: a call is refused only by a budget it would
// overfill, and both teams full would be more than it allows.
func TestServerFleetKeepsBudgets(t *testing.T) {
	t.Parallel()
	eachDurableStore(t, testFleetBudgets)
}

func testFleetBudgets(t *testing.T, storage string) {
	untilPastMidnight(t, 2*time.Minute) // the teams' windows are days
	hooks := &budgetHooks{}
	receiver := httptest.NewServer(hooks)
	t.Cleanup(receiver.Close)

	// Ids of their own, so that runs sharing a database never meet: a
	// budget counts every call recorded under its id.
	suffix := randomKey(t, "")[:12]
	org, search, maps := "acme-"+suffix, "search-"+suffix, "maps-"+suffix
	type member struct{ id, key, team string }
	var members []member
	for _, m := range []struct{ name, team string }{{"alice", search}, {"bob", search}, {"carol", maps}, {"dave", maps}} {
		members = append(members, member{id: m.name + "-" + suffix, key: randomKey(t, "tg_test_budget_"+m.name+"_"), team: m.team})
	}
	ids := func(team string) []string {
		var out []string
		for _, m := range members {
			if m.team == team {
				out = append(out, m.id)
			}
		}
		return out
	}
	var principals []any
	for _, m := range members {
		principals = append(principals, map[string]any{"id": m.id, "apiKeys": []string{m.key}})
	}
	patKey := randomKey(t, "tg_test_budget_pat_")
	path := writeConfig(t, map[string]any{
		"listen":        "127.0.0.1:0",
		"metricsListen": "127.0.0.1:0",
		"storage":       storage,
		"feeRate":       "0", // each goal-data call is then its price, 0.1000
		"principals":    principals,
		"approvers":     []any{map[string]any{"id": "pat-" + suffix, "keys": []string{patKey}}},
		"approvals":     map[string]any{"webhookUrl": receiver.URL + "/hooks", "webhookSecret": webhookSecret},
		"budgets": []any{
			map[string]any{"id": org, "name": "Acme", "monthlyLimitUsd": "1.1000", "alerts": []float64{0.5, 1},
				"approvers": []string{"pat-" + suffix}},
			map[string]any{"id": search, "name": "Search team", "parent": org, "members": ids(search),
				"dailyLimitUsd": "0.5000", "alerts": []float64{0.5, 1}},
			map[string]any{"id": maps, "name": "Maps team", "parent": org, "members": ids(maps),
				"dailyLimitUsd": "0.7000", "alerts": []float64{0.5, 1}},
		},
	})
	a, b, baseA, baseB := fleetOf(t, path)

	// Each member tries 10 calls, half through each instance, all at once:
	// 40 tries of 0.1000 against 0.5000 and 0.7000 for the teams, 1.1000
	// in all.
	const tries = 10
	type outcome struct {
		member member
		status int
		body   map[string]any
		err    error
	}
	results := make(chan outcome, len(members)*tries)
	var wg sync.WaitGroup
	for _, m := range members {
		for i := range tries {
			wg.Go(func() {
				c := client{t: t, base: []string{baseA, baseB}[i%2], key: m.key}
				r, err := c.send(http.MethodPost, "/v1/tools/goal-data/quote", nil)
				if err != nil || r.status != http.StatusCreated {
					results <- outcome{member: m, status: r.status, err: err}
					return
				}
				var q struct {
					Quote struct {
						ID             string `json:"id"`
						ManifestDigest string `json:"manifestDigest"`
					} `json:"quote"`
				}
				if err := json.Unmarshal(r.body, &q); err != nil {
					results <- outcome{member: m, err: err}
					return
				}
				r, err = c.sendCall("goal-data", q.Quote.ID, q.Quote.ManifestDigest, fmt.Sprintf("%s-%d", m.id, i),
					map[string]any{"goal": fmt.Sprintf("budget %s %d", m.id, i), "step": 1})
				var body map[string]any
				if err == nil {
					err = json.Unmarshal(r.body, &body)
				}
				results <- outcome{member: m, status: r.status, body: body, err: err}
			})
		}
	}
	wg.Wait()
	close(results)

	admitted := map[string]int{} // by team
	refusedBy := map[string]int{}
	for o := range results {
		require.NoError(t, o.err)
		switch o.status {
		case http.StatusOK:
			require.Equal(t, "completed", o.body["status"], "%v", o.body)
			admitted[o.member.team]++
		case http.StatusForbidden:
			e := o.body["error"].(map[string]any)
			require.Equal(t, "spend_limit_exceeded", e["code"], "%v", o.body)
			refusal, ok := e["budget"].(map[string]any)
			require.True(t, ok, "a budget's refusal says which: %v", o.body)
			assert.Equal(t, "0.1000", refusal["requestedUsd"])
			refusedBy[refusal["id"].(string)]++
		default:
			t.Fatalf("a call of %s answered %d: %v", o.member.id, o.status, o.body)
		}
	}
	t.Logf("admitted by team: %v; refused by budget: %v", admitted, refusedBy)
	assert.LessOrEqual(t, admitted[search], 5, "the search team's daily limit held")
	assert.LessOrEqual(t, admitted[maps], 7, "the maps team's daily limit held")
	assert.Equal(t, 11, admitted[search]+admitted[maps], "the organization's limit held, and was reached")
	assert.Equal(t, len(members)*tries-11, refusedBy[org]+refusedBy[search]+refusedBy[maps])
	assert.Positive(t, refusedBy[org], "the team not full is refused by the organization, the first budget short")

	// What was admitted is what was charged, on either instance's view.
	pat := client{t: t, base: baseB, key: patKey}
	r := pat.do(http.MethodGet, "/v1/budgets", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var list struct {
		Budgets []struct {
			ID      string `json:"id"`
			Windows map[string]struct {
				LimitUSD     string `json:"limitUsd"`
				UsedUSD      string `json:"usedUsd"`
				RemainingUSD string `json:"remainingUsd"`
			} `json:"windows"`
		} `json:"budgets"`
	}
	require.NoError(t, json.Unmarshal(r.body, &list))
	tenths := func(n int) string { return fmt.Sprintf("0.%d000", n) }
	used := map[string]string{}
	for _, bu := range list.Budgets {
		for kind, w := range bu.Windows {
			used[bu.ID+" "+kind] = w.UsedUSD
		}
	}
	assert.Equal(t, map[string]string{
		org + " monthly":  "1.1000",
		search + " daily": tenths(admitted[search]),
		maps + " daily":   tenths(admitted[maps]),
	}, used, "the pat approver sees acme and its teams: %s", r.body)

	// Each threshold reached, once across the fleet.
	// Each team has at least 4 of 5 or 6 of 7: past half. A team is full
	// when the other took one call less than its own limit.
	want := []string{org + " monthly 0.5", org + " monthly 1", search + " daily 0.5", maps + " daily 0.5"}
	if admitted[search] == 5 {
		want = append(want, search+" daily 1")
	}
	if admitted[maps] == 7 {
		want = append(want, maps+" daily 1")
	}
	slices.Sort(want)
	deadline := time.Now().Add(30 * time.Second)
	for len(hooks.crossings(t)) < len(want) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	// A second sender, had there been one, would have sent by now.
	time.Sleep(3 * time.Second)
	assert.Equal(t, want, hooks.crossings(t), "each crossing once")
	seen := map[string]bool{}
	for _, g := range hooks.thresholds(t) {
		assert.False(t, seen[g.id], "webhook-id %s is sent once", g.id)
		seen[g.id] = true
		if g.data["budget"].(map[string]any)["id"] == org && g.data["fraction"] == 1.0 {
			assert.Equal(t, "Acme", g.data["budget"].(map[string]any)["name"])
			assert.Equal(t, "1.1000", g.data["limitUsd"])
			assert.Equal(t, "1.1000", g.data["usedUsd"])
			assert.NotEmpty(t, g.data["periodStart"])
			assert.NotEmpty(t, g.data["resetsAt"])
		}
	}

	// Every instance exports the fleet's use, read at most 10 s before.
	for _, p := range []*process{a, b} {
		metricsURL := strings.TrimPrefix(p.waitLine("toolgate metrics on ", 10*time.Second), "toolgate metrics on ")
		wantUsed := fmt.Sprintf(`toolgate_budget_used_usd{budget=%q,window="monthly"} 1.1`, org)
		wantLimit := fmt.Sprintf(`toolgate_budget_limit_usd{budget=%q,window="daily"} 0.7`, maps)
		var metrics string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			resp, err := http.Get(metricsURL)
			require.NoError(t, err)
			if metrics = readAll(t, resp); strings.Contains(metrics, wantUsed+"\n") {
				break
			}
		}
		assert.Contains(t, metrics, wantUsed+"\n", "the organization's month, on every instance")
		assert.Contains(t, metrics, wantLimit+"\n")
		for _, m := range members {
			assert.NotContains(t, metrics, m.id, "no principal in a budget metric")
		}
	}

	assert.Equal(t, 0, a.stop(exitTimeout))
	assert.Equal(t, 0, b.stop(exitTimeout))
	out := a.stdout.String() + a.stderr.String() + b.stdout.String() + b.stderr.String()
	for _, m := range members {
		assert.NotContains(t, out, m.key, "no key in any output")
	}
	assert.NotContains(t, out, patKey)
	assert.NotContains(t, out, strings.TrimPrefix(webhookSecret, "whsec_"))
}

// ownDatabase creates a database for one test, dropped when it ends, and
// returns its URL: the server keeps its tables in the public schema of the
// database it is given, so a database of its own keeps a run apart from
// whatever schema another run left in the shared one. Where the role may
// not create databases, the given one is used: the budgets' and
// principals' ids are the run's own.
func ownDatabase(t *testing.T, base string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	defer conn.Close(ctx)
	name := "toolgate_budgets_" + randomKey(t, "")[:12]
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Logf("cannot create a database (%v): using the one given", err)
		return base
	}
	t.Cleanup(func() {
		// The servers have exited and closed their pools, so the plain
		// form works too where WITH (FORCE) (PostgreSQL 13) is not known.
		// Each try has a connection of its own: a failed statement may
		// close the one it ran on. A loaded machine may take a while.
		drop := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize()
		var errs []error
		for _, stmt := range []string{drop + " WITH (FORCE)", drop, drop + " WITH (FORCE)"} {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			conn, err := pgx.Connect(ctx, base)
			if err == nil {
				_, err = conn.Exec(ctx, stmt)
				conn.Close(ctx)
			}
			cancel()
			if err == nil {
				return
			}
			errs = append(errs, err)
		}
		t.Errorf("drop database %s: %v", name, errors.Join(errs...))
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	u.Path, u.RawPath = "/"+name, ""
	return u.String()
}
