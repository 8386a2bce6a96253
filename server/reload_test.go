package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetype"
)

// reloadDoc is a config file as these tests write it, so that a reload
// changes one thing at a time (and a rule can join the same reload).
type reloadDoc struct {
	dailyLimit string   // the team budget's dailyLimitUsd
	approvers  []string // "id:key" pairs, each approving for alice
	listen     string   // "" is the default
	// approverMode puts alice in approver mode; else her own approval of
	// a tool's digest lets her calls run.
	approverMode bool
	broken       bool // a daily limit that is no amount
}

func (d reloadDoc) json(t *testing.T) []byte {
	t.Helper()
	approvers := []any{}
	for _, a := range d.approvers {
		id, key, _ := strings.Cut(a, ":")
		approvers = append(approvers, map[string]any{"id": id, "keys": []string{key}, "principals": []string{"alice"}})
	}
	mode := "caller"
	if d.approverMode {
		mode = "approver"
	}
	limit := any(d.dailyLimit)
	if d.broken {
		limit = "a lot"
	}
	doc := map[string]any{
		"metricsListen": "127.0.0.1:0",
		"principals":    []any{map[string]any{"id": "alice", "apiKeys": []string{"tg_test_reload_alice"}, "approvalMode": mode}},
		"approvers":     approvers,
		"budgets":       []any{map[string]any{"id": "team", "members": []string{"alice"}, "dailyLimitUsd": limit}},
	}
	if d.listen != "" {
		doc["listen"] = d.listen
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	return data
}

// syncBuffer is a log that tests read while the server writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines are the log's lines that contain s.
func (b *syncBuffer) lines(s string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// startReloadable starts a server, offline, from the config file d
// writes, watching it at interval, and its log.
func startReloadable(t *testing.T, d reloadDoc, interval time.Duration) (*Server, string, *syncBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolgate.json")
	require.NoError(t, os.WriteFile(path, d.json(t), 0o600))
	cfg, err := LoadConfig(path)
	require.NoError(t, err)
	log := &syncBuffer{}
	srv, err := New(t.Context(), cfg, &Options{Offline: true, Getenv: func(string) string { return "" },
		Logger: slog.New(slog.NewJSONHandler(log, nil)), ConfigPollInterval: interval})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv, path, log
}

// rewrite replaces the config file at path with d.
func rewrite(t *testing.T, path string, d reloadDoc) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, d.json(t), 0o600))
}

// callGoalData quotes and calls goal-data (0.11 USD with its fee) as
// alice, approving its digest as the caller would, and returns the
// refusal's code, "" when it ran.
func callGoalData(t *testing.T, srv *Server, key string) toolgatetype.Code {
	t.Helper()
	alice := srv.Gateway().For("alice")
	q, err := alice.Quote(t.Context(), "goal-data")
	require.NoError(t, err)
	_, err = alice.Call(t.Context(), toolgatetype.CallRequest{Tool: "goal-data", QuoteID: q.Quote.ID,
		Input: json.RawMessage(`{"goal": "reload", "step": 1}`), ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: key})
	var te *toolgatetype.Error
	if errors.As(err, &te) {
		return te.Code
	}
	require.NoError(t, err)
	return ""
}

// configInfo is every series of toolgate_config_info, by its sha256.
func configInfoSeries(t *testing.T, srv *Server) map[string]float64 {
	t.Helper()
	families, err := srv.tel.metrics.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "toolgate_config_info" {
			continue
		}
		for _, m := range f.GetMetric() {
			out[label(m, "sha256")] = m.GetGauge().GetValue()
		}
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestReloadBudgetLimitKeepsSpend: a lower or higher limit reloaded
// refuses or admits the next call, counting what was spent before the
// reload; and toolgate_config_info names the file in force, one series.
func TestReloadBudgetLimitKeepsSpend(t *testing.T) {
	t.Parallel()
	srv, path, log := startReloadable(t, reloadDoc{dailyLimit: "0.25"}, -1)
	first, err := LoadConfig(path)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{first.SHA256()[:12]: 1}, configInfoSeries(t, srv))

	assert.Empty(t, callGoalData(t, srv, "k1"), "0.11 of 0.25")
	assert.Empty(t, callGoalData(t, srv, "k2"), "0.22 of 0.25")
	assert.Equal(t, toolgatetype.CodeSpendLimitExceeded, callGoalData(t, srv, "k3"), "0.33 would pass 0.25")

	rewrite(t, path, reloadDoc{dailyLimit: "0.50"})
	require.NoError(t, srv.Reload(t.Context()))
	assert.Empty(t, callGoalData(t, srv, "k4"), "0.33 is within 0.50")

	rewrite(t, path, reloadDoc{dailyLimit: "0.40"})
	require.NoError(t, srv.Reload(t.Context()))
	assert.Equal(t, toolgatetype.CodeSpendLimitExceeded, callGoalData(t, srv, "k5"),
		"the 0.33 spent before the reloads still counts: 0.44 would pass 0.40")
	budgets, err := srv.Gateway().Budgets(t.Context())
	require.NoError(t, err)
	require.Len(t, budgets, 1)
	assert.Equal(t, "0.4000", budgets[0].Windows[toolgatetype.BudgetDaily].LimitUSD)
	assert.Equal(t, "0.3300", budgets[0].Windows[toolgatetype.BudgetDaily].UsedUSD)

	second, err := LoadConfig(path)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{second.SHA256()[:12]: 1}, configInfoSeries(t, srv), "one series, of the file in force")
	assert.Len(t, log.lines(`"msg":"config reloaded"`), 2)
	assert.Len(t, log.lines(second.SHA256()[:12]), 1, "the reload says which config now runs")
	assert.Empty(t, log.lines("next restart"), "only reloadable fields changed")
}

// TestReloadApprovers: once reloaded, a new approver's key decides a
// request, and a removed approver's key is refused as unknown (401), over
// the HTTP API.
func TestReloadApprovers(t *testing.T) {
	t.Parallel()
	srv, path, _ := startReloadable(t, reloadDoc{dailyLimit: "5", approverMode: true, approvers: []string{"pat:tg_test_reload_pat"}}, -1)
	api := httptest.NewServer(srv.Handler())
	defer api.Close()
	do := func(key, method, path string, body any) (int, map[string]any) {
		data, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest(method, api.URL+path, bytes.NewReader(data))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return resp.StatusCode, out
	}
	ask := func() string {
		status, q := do("tg_test_reload_alice", http.MethodPost, "/v1/tools/goal-data/quote", nil)
		require.Equal(t, http.StatusCreated, status, "%v", q)
		status, r := do("tg_test_reload_alice", http.MethodPost, "/v1/approval-requests",
			map[string]any{"quoteId": q["quote"].(map[string]any)["id"], "input": map[string]any{"goal": "reload", "step": 1}})
		require.Equal(t, http.StatusCreated, status, "%v", r)
		return r["id"].(string)
	}
	before := ask()
	status, _ := do("tg_test_reload_pat", http.MethodGet, "/v1/approval-requests/"+before, nil)
	require.Equal(t, http.StatusOK, status, "pat approves for alice")

	rewrite(t, path, reloadDoc{dailyLimit: "5", approverMode: true, approvers: []string{"sam:tg_test_reload_sam"}})
	require.NoError(t, srv.Reload(t.Context()))

	status, body := do("tg_test_reload_pat", http.MethodPost, "/v1/approval-requests/"+before+"/approve", map[string]any{})
	assert.Equal(t, http.StatusUnauthorized, status, "a removed approver's key: %v", body)
	status, body = do("tg_test_reload_sam", http.MethodPost, "/v1/approval-requests/"+before+"/approve", map[string]any{})
	require.Equal(t, http.StatusOK, status, "a new approver's key decides a request made before: %v", body)
	assert.Equal(t, "approved", body["status"])
	after := ask()
	status, body = do("tg_test_reload_sam", http.MethodPost, "/v1/approval-requests/"+after+"/deny", map[string]any{})
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "denied", body["status"])
}

// TestReloadBrokenFileKeepsWhatRuns: a file that does not load changes
// nothing, and says why in one line naming the field, the one a start
// would stop with; the watch reloads a changed file on its own, once per
// change, and a field that needs a restart is named.
func TestReloadBrokenFileKeepsWhatRuns(t *testing.T) {
	t.Parallel()
	srv, path, log := startReloadable(t, reloadDoc{dailyLimit: "0.15"}, 10*time.Millisecond)
	first, err := LoadConfig(path)
	require.NoError(t, err)
	assert.Empty(t, callGoalData(t, srv, "k1"), "0.11 of 0.15")

	rewrite(t, path, reloadDoc{dailyLimit: "0.15", broken: true})
	_, want := LoadConfig(path)
	require.Error(t, want)
	assert.Equal(t, `config: budgets[0].dailyLimitUsd: "a lot" is not a decimal amount`, want.Error())
	require.Eventually(t, func() bool { return len(log.lines("not reloaded")) > 0 }, time.Minute, 10*time.Millisecond,
		"the watch reads the changed file")
	err = srv.Reload(t.Context()) // and SIGHUP's way, once more
	require.Error(t, err)
	assert.Equal(t, want.Error(), err.Error())
	lines := log.lines("not reloaded")
	require.Len(t, lines, 2, "one line per reload: the watch's, once for the change, and Reload's")
	for _, l := range lines {
		var entry struct{ Error string }
		require.NoError(t, json.Unmarshal([]byte(l), &entry))
		assert.Equal(t, want.Error(), entry.Error, "the field, as a start names it")
	}
	assert.Equal(t, toolgatetype.CodeSpendLimitExceeded, callGoalData(t, srv, "k2"), "the budget that runs still refuses")
	assert.Equal(t, map[string]float64{first.SHA256()[:12]: 1}, configInfoSeries(t, srv), "the config in force is still the first")

	rewrite(t, path, reloadDoc{dailyLimit: "1", listen: "127.0.0.1:9999"})
	next, err := LoadConfig(path)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return configInfoSeries(t, srv)[next.SHA256()[:12]] == 1 }, time.Minute, 10*time.Millisecond,
		"the watch applies the fixed file")
	assert.Len(t, configInfoSeries(t, srv), 1)
	assert.Empty(t, callGoalData(t, srv, "k3"), "0.22 of 1")
	restart := log.lines("next restart")
	require.Len(t, restart, 1)
	assert.Contains(t, restart[0], `"fields":["listen"]`)
}
