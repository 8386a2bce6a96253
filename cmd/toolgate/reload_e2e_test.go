package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reloadConfig is the config file of the reload tests, written whole on
// every change as an operator would, so that one reload can change several
// things (a rule beside a budget, say: one more field here).
type reloadConfig struct {
	storage string
	suffix  string // the run's own, in every id, for a shared database
	key     string // the caller's
	// teamDailyLimit is the team budget's dailyLimitUsd.
	teamDailyLimit string
	// denyStep is the goal-data step the rule no-step-N denies.
	denyStep int
	// broken makes the limit no amount, a file that does not load.
	broken bool
}

func (c reloadConfig) caller() string { return "caller-" + c.suffix }
func (c reloadConfig) team() string   { return "team-" + c.suffix }
func (c reloadConfig) rule() string   { return fmt.Sprintf("no-step-%d", c.denyStep) }

// write writes the config to path, atomically: a watching server reads
// the old file or the new one, never half of one.
func (c reloadConfig) write(t *testing.T, path string) {
	t.Helper()
	limit := any(c.teamDailyLimit)
	if c.broken {
		limit = "a lot"
	}
	doc := map[string]any{
		"listen":        "127.0.0.1:0",
		"metricsListen": "127.0.0.1:0",
		"storage":       c.storage,
		"feeRate":       "0", // a goal-data call is then its price, 0.1000
		"principals": []any{map[string]any{"id": c.caller(), "apiKeys": []string{c.key},
			"spendControls": map[string]any{"dailyLimitUsd": "100000", "monthlyLimitUsd": "100000",
				"rateLimitPerMinute": 100000, "rateLimitPerHour": 100000}}},
		"budgets": []any{map[string]any{"id": c.team(), "members": []string{c.caller()}, "dailyLimitUsd": limit}},
		"rules": []any{map[string]any{"name": c.rule(), "effect": "deny",
			"when": fmt.Sprintf("tool.slug == 'goal-data' && input.step == %d", c.denyStep)}},
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	tmp := path + ".new"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// TestReloadFleetUnderLoad runs two server processes on one store
// (SQLite, and PostgreSQL when TOOLGATE_TEST_POSTGRES_URL names one)
// under a load of calls through both, and lowers a budget's limit in the
// config file with SIGHUP to both: the load sees no error but the budget's
// refusals, which start once both have reloaded; both export the same
// toolgate_config_info, the hash config check prints. A broken file then
// changes nothing: both keep serving, and each says why in a line naming
// the field, the line a start would stop with.
func TestReloadFleetUnderLoad(t *testing.T) {
	t.Parallel()
	eachDurableStore(t, testReloadFleet)
}

func testReloadFleet(t *testing.T, storage string) {
	untilPastMidnight(t, 2*time.Minute) // the budget's window is a day
	suffix := randomKey(t, "")[:12]
	cfg := reloadConfig{storage: storage, suffix: suffix, key: randomKey(t, "tg_test_reload_"), teamDailyLimit: "100000", denyStep: 2}
	path := filepath.Join(t.TempDir(), "toolgate.json")
	cfg.write(t, path)
	a, b, baseA, baseB := fleetOf(t, path)
	metricsA := a.waitLine("toolgate metrics on ", 10*time.Second)
	metricsB := b.waitLine("toolgate metrics on ", 10*time.Second)
	metricsA, metricsB = strings.TrimPrefix(metricsA, "toolgate metrics on "), strings.TrimPrefix(metricsB, "toolgate metrics on ")

	// The load: a few callers quoting and calling goal-data through both
	// instances until told to stop, each outcome kept.
	const workers = 4
	var (
		mu       sync.Mutex
		outcomes []loadOutcome
		wg       sync.WaitGroup
	)
	stop := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := client{t: t, base: []string{baseA, baseB}[(w+i)%2], key: cfg.key}
				// Steps 1 and 3, which the first rule (no-step-2) denies
				// neither of.
				o := loadCall(c, fmt.Sprintf("reload-%s-%d-%d", suffix, w, i), 1+2*(i/2%2))
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		})
	}
	loaded := func(n int) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(outcomes) >= n
	}
	require.Eventually(t, func() bool { return loaded(40) }, time.Minute, 20*time.Millisecond, "the load runs")

	// Lower the limit below what is spent: every call from then on is
	// the budget's to refuse.
	cfg.teamDailyLimit = "0.1000"
	cfg.write(t, path)
	lowered := checkConfig(t, path)
	for _, p := range []*process{a, b} {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	}
	for _, p := range []*process{a, b} {
		require.Eventually(t, func() bool { return reloadedTo(p, lowered) }, time.Minute, 20*time.Millisecond, "each instance reloads")
	}
	mu.Lock()
	reloadedAt := len(outcomes)
	mu.Unlock()
	require.Eventually(t, func() bool { return loaded(reloadedAt + 40) }, time.Minute, 20*time.Millisecond, "the load goes on")

	// One reload then changes the rule and the budget together: the
	// limit back up, and step 1 denied. From then on step 3 completes
	// (the budget changed) and step 1 is the new rule's to refuse.
	// Counted before the file is written: the watch of the file may
	// reload it before the signal comes.
	mu.Lock()
	ruleSentAt := len(outcomes)
	mu.Unlock()
	cfg.teamDailyLimit, cfg.denyStep = "100000", 1
	cfg.write(t, path)
	wantSum := checkConfig(t, path)
	for _, p := range []*process{a, b} {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	}
	for _, p := range []*process{a, b} {
		require.Eventually(t, func() bool { return reloadedTo(p, wantSum) }, time.Minute, 20*time.Millisecond, "each instance reloads again")
	}
	mu.Lock()
	ruledAt := len(outcomes)
	mu.Unlock()
	require.Eventually(t, func() bool { return loaded(ruledAt + 40) }, time.Minute, 20*time.Millisecond, "the load goes on")
	close(stop)
	wg.Wait()

	// A call admitted before its instance reloaded may finish after (one
	// per worker at most): the phases are told apart past that.
	completed, refused, denied := 0, 0, 0
	for i, o := range outcomes {
		require.NoError(t, o.err)
		settled := func(at int) bool { return i >= at+workers }
		switch {
		case o.status == http.StatusOK:
			completed++
			assert.False(t, settled(reloadedAt) && i < ruleSentAt, "a call completed after both instances lowered the limit")
			assert.False(t, settled(ruledAt) && o.step == 1, "a step 1 call completed after both instances took the new rule")
		case o.status == http.StatusForbidden && o.code == "spend_limit_exceeded":
			refused++
			assert.Equal(t, cfg.team(), o.budget, "the team's budget refuses")
			assert.False(t, settled(ruledAt), "the budget refused after both instances raised its limit")
		case o.status == http.StatusForbidden && o.code == "rule_denied":
			denied++
			assert.Equal(t, "no-step-1", o.rule, "only the new rule denies")
			assert.Equal(t, 1, o.step)
			assert.GreaterOrEqual(t, i, ruleSentAt, "the new rule denied before its reload")
		default:
			t.Fatalf("a call answered %d %s", o.status, o.code)
		}
	}
	t.Logf("%d calls completed, %d refused by the budget, %d denied by the new rule", completed, refused, denied)
	assert.Positive(t, completed)
	assert.GreaterOrEqual(t, refused, 40-workers, "every call after the first reload")
	assert.GreaterOrEqual(t, denied, 20-workers, "every step 1 call after the second")

	// The fleet runs one config, the one config check names.
	for _, m := range []string{metricsA, metricsB} {
		require.Eventually(t, func() bool { return configInfoOf(t, m) == wantSum }, time.Minute, 20*time.Millisecond,
			"toolgate_config_info at %s", m)
	}

	// A broken file changes nothing, and says why.
	cfg.broken = true
	cfg.write(t, path)
	code, out := runCLI(t, nil, "config", "check", "-config", path)
	assert.Equal(t, 2, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 1, out)
	want := "toolgate: " + path + ": config: budgets[0].dailyLimitUsd: "
	require.True(t, strings.HasPrefix(lines[0], want), "%s", out)
	fieldError := strings.TrimPrefix(lines[0], "toolgate: "+path+": ")
	for _, p := range []*process{a, b} {
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	}
	for _, p := range []*process{a, b} {
		var said []string
		require.Eventually(t, func() bool {
			said = nil
			for _, l := range p.logLines() {
				if strings.HasPrefix(fmt.Sprint(l["msg"]), "config not reloaded") {
					said = append(said, fmt.Sprint(l["error"]))
				}
			}
			return len(said) > 0
		}, time.Minute, 20*time.Millisecond, "each instance says why")
		// The file's watch may read it before the signal comes, once.
		assert.LessOrEqual(t, len(said), 2)
		for _, s := range said {
			assert.Equal(t, fieldError, s, "the line a start would stop with")
		}
	}
	for _, base := range []string{baseA, baseB} {
		o := loadCall(client{t: t, base: base, key: cfg.key}, "reload-after-broken-"+suffix+base, 1)
		require.NoError(t, o.err)
		assert.Equal(t, http.StatusForbidden, o.status, "still serving, on the rule that runs")
		assert.Equal(t, "no-step-1", o.rule)
	}
	for _, m := range []string{metricsA, metricsB} {
		assert.Equal(t, wantSum, configInfoOf(t, m), "the config in force is still the last good one")
	}
	assert.Equal(t, 0, a.stop(exitTimeout))
	assert.Equal(t, 0, b.stop(exitTimeout))
}

// reloadedTo reports whether p logged a reload to the config whose short
// hash is sum: by the signal or by its watch of the file, whichever came
// first (the other reloads the same file again, or finds it unchanged).
func reloadedTo(p *process, sum string) bool {
	return strings.Contains(p.stderr.String(), `"msg":"config reloaded","sha256":"`+sum+`"`)
}

// loadOutcome is how a call of the load ended.
type loadOutcome struct {
	step   int    // the goal-data step called
	rule   string // the denying rule's name
	status int
	code   string // the error's, for a refusal
	budget string // the refusing budget's id
	err    error
}

// loadCall quotes and calls goal-data through c, for a goroutine of its
// own: what went wrong is in the outcome, never a failed test.
func loadCall(c client, idemKey string, step int) (o loadOutcome) {
	o.step = step
	r, err := c.send(http.MethodPost, "/v1/tools/goal-data/quote", nil)
	if err != nil || r.status != http.StatusCreated {
		o.status, o.err = r.status, err
		if err == nil {
			o.err = fmt.Errorf("quote answered %d: %s", r.status, r.body)
		}
		return o
	}
	var q struct {
		Quote struct {
			ID             string `json:"id"`
			ManifestDigest string `json:"manifestDigest"`
		} `json:"quote"`
	}
	if o.err = json.Unmarshal(r.body, &q); o.err != nil {
		return o
	}
	r, err = c.sendCall("goal-data", q.Quote.ID, q.Quote.ManifestDigest, idemKey, map[string]any{"goal": "reload", "step": step})
	if err != nil {
		o.err = err
		return o
	}
	o.status = r.status
	var body struct {
		Error struct {
			Code   string `json:"code"`
			Budget struct {
				ID string `json:"id"`
			} `json:"budget"`
			Rule struct {
				Name string `json:"name"`
			} `json:"rule"`
		} `json:"error"`
	}
	o.err = json.Unmarshal(r.body, &body)
	o.code, o.budget, o.rule = body.Error.Code, body.Error.Budget.ID, body.Error.Rule.Name
	return o
}

// checkConfig runs toolgate config check on path, which must pass, and
// returns the hash it prints.
func checkConfig(t *testing.T, path string) string {
	t.Helper()
	code, out := runCLI(t, nil, "config", "check", "-config", path)
	require.Equal(t, 0, code, out)
	m := regexp.MustCompile(`^config ok: sha256 ([0-9a-f]{12})\n$`).FindStringSubmatch(out)
	require.NotNil(t, m, "one line: %q", out)
	return m[1]
}

// configInfoOf is the sha256 of the one toolgate_config_info series at
// the metrics URL.
func configInfoOf(t *testing.T, metricsURL string) string {
	t.Helper()
	series := regexp.MustCompile(`(?m)^toolgate_config_info\{sha256="([0-9a-f]*)"\} 1$`).FindAllStringSubmatch(scrape(t, metricsURL), -1)
	require.Len(t, series, 1, "one series")
	return series[0][1]
}

// TestReloadConfigCheck: config check passes a good file with its hash
// (the SHA-256 of its bytes) and fails a bad one with the line a start
// prints, exit 2, starting nothing.
func TestReloadConfigCheck(t *testing.T) {
	t.Parallel()
	good := writeConfig(t, map[string]any{"storage": "postgres://nobody@127.0.0.1:1/none",
		"principals": []any{map[string]any{"id": "alice", "apiKeys": []string{"tg_test_check_alice"}}}})
	data, err := os.ReadFile(good)
	require.NoError(t, err)
	sum := checkConfig(t, good) // no database reached: none answers there
	assert.Equal(t, sha256Hex(string(data))[:12], sum)

	bad := writeConfig(t, map[string]any{"budgets": []any{map[string]any{"id": "team", "dailyLimitUsd": "lots"}}})
	code, out := runCLI(t, nil, "config", "check", "-config", bad)
	assert.Equal(t, 2, code)
	startCode, startOut := runCLI(t, nil, "serve", "-config", bad)
	assert.Equal(t, 2, startCode)
	assert.Equal(t, startOut, out, "the line a start stops with")
	assert.Equal(t, "toolgate: "+bad+": config: budgets[0].dailyLimitUsd: \"lots\" is not a decimal amount\n", out)

	code, out = runCLI(t, []string{"TOOLGATE_CONFIG="}, "config", "check")
	assert.Equal(t, 2, code, "no file to check: %s", out)
}
