package loadtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/tools/goalprovider"
	"github.com/toolgate/toolgate/tools/recorded"
	"github.com/toolgate/toolgate/upstream"
)

// Client timeouts. A patient caller waits out the gateway's upstream
// deadline and then some; an impatient one gives up first and retries.
const (
	patientTimeout   = upstream.DefaultTimeout + 20*time.Second
	impatientTimeout = 3 * time.Second
	// impatientEvery makes one caller in this many impatient.
	impatientEvery = 8
)

// Spend controls of the run's principals.
const (
	generousPrincipals = 10
	// tightDailyLimit lets the tight-daily principal make two goal-data
	// calls (0.1100 each) a day, across every tool.
	tightDailyLimit = "0.2200"
	// tightGoalLimit lets the tight-goal principal make three goal-data
	// calls a day; its free calls are not limited.
	tightGoalLimit = "0.3300"
	// generousDaily and the rest are far beyond what a run can spend.
	generousDaily   = "1000000.0000"
	generousMonthly = "10000000.0000"
	generousRate    = 100000000
)

// principal is one caller identity of a run.
type principal struct {
	id  string
	key string
	// dailyLimit and goalLimit are the tight limits, nil when generous.
	dailyLimit *decimal.Decimal
	goalLimit  *decimal.Decimal
}

func (p principal) tight() bool { return p.dailyLimit != nil || p.goalLimit != nil }

func (p principal) config() map[string]any {
	controls := map[string]any{
		"maxPerCallUsd":      "25.0000",
		"dailyLimitUsd":      generousDaily,
		"monthlyLimitUsd":    generousMonthly,
		"rateLimitPerMinute": generousRate,
		"rateLimitPerHour":   generousRate,
	}
	if p.dailyLimit != nil {
		controls["dailyLimitUsd"] = p.dailyLimit.StringFixed(4)
	}
	if p.goalLimit != nil {
		controls["tools"] = map[string]any{"goal-data": map[string]any{"allowed": true, "dailyLimitUsd": p.goalLimit.StringFixed(4)}}
	}
	return map[string]any{"id": p.id, "apiKeys": []string{p.key}, "spendControls": controls}
}

// rig is everything a run needs but the server process: the upstreams, the
// principals, the config and the HTTP clients.
type rig struct {
	t          *testing.T
	set        settings
	bin        string
	runID      string
	principals []principal
	providers  *faultyUpstream // the free tools' providers, from recordings
	goal       *faultyUpstream // the goal-data provider
	configPath string
	storage    string // as the config gives it
	patient    *http.Client
	impatient  *http.Client
}

// newRig prepares a run over storage ("memory", "sqlite:" and a path beside
// the config file, or a PostgreSQL URL).
func newRig(t *testing.T, set settings, storage string) *rig {
	t.Helper()
	r := &rig{t: t, set: set, bin: toolgateBinary(t), runID: randomHex(t, 6), storage: storage}
	r.providers = newFaultyUpstream(t, recorded.Handler(), set.seed)
	r.goal = newFaultyUpstream(t, goalprovider.New(), set.seed+1)
	for i := range generousPrincipals {
		r.principals = append(r.principals, principal{id: fmt.Sprintf("load-%s-p%d", r.runID, i), key: "tg_load_" + randomHex(t, 16)})
	}
	daily, goal := decimal.RequireFromString(tightDailyLimit), decimal.RequireFromString(tightGoalLimit)
	r.principals = append(r.principals,
		principal{id: "load-" + r.runID + "-tight-daily", key: "tg_load_" + randomHex(t, 16), dailyLimit: &daily},
		principal{id: "load-" + r.runID + "-tight-goal", key: "tg_load_" + randomHex(t, 16), goalLimit: &goal},
	)
	var principals []any
	for _, p := range r.principals {
		principals = append(principals, p.config())
	}
	r.configPath = writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"storage":    storage,
		"quoteTTL":   "10m", // longer than any run, restart included
		"feeRate":    "0.10",
		"principals": principals,
		"upstreams": map[string]string{
			"earthquake-search": r.providers.URL(),
			"exchange-rates":    r.providers.URL(),
			"public-holidays":   r.providers.URL(),
			"current-weather":   r.providers.URL(), // never callable, but never a real host either
			"goal-data":         r.goal.URL(),
		},
		"trust": map[string]any{"goal-data": map[string]any{"paymentVerified": true, "endpointVerified": true}},
	})

	tr := &http.Transport{
		Proxy:               nil, // never through a proxy: straight to 127.0.0.1
		DialContext:         dialLoopback,
		MaxIdleConns:        2*set.callers + 64,
		MaxIdleConnsPerHost: 2*set.callers + 64,
		IdleConnTimeout:     30 * time.Second,
	}
	t.Cleanup(tr.CloseIdleConnections)
	r.patient = &http.Client{Transport: tr, Timeout: patientTimeout}
	r.impatient = &http.Client{Transport: tr, Timeout: impatientTimeout}
	return r
}

// start starts a server with the rig's config.
func (r *rig) start(name string) *server {
	r.t.Helper()
	return startServer(r.t, r.bin, name, r.configPath)
}

// dialLoopback dials only 127.0.0.1, so no request of the test can leave
// the machine whatever URL it is given.
func dialLoopback(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if host != "127.0.0.1" {
		return nil, fmt.Errorf("loadtest: refusing to dial %s: only 127.0.0.1", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeConfig(t *testing.T, cfg any) string {
	t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "toolgate.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// reply is one HTTP exchange; err is a transport error (no status).
type reply struct {
	status int
	header http.Header
	body   []byte
	err    error
	start  time.Time
	took   time.Duration
}

// code is the error code of an error body, "" for any other.
func (r reply) code() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &e) != nil {
		return ""
	}
	return e.Error.Code
}

// send makes one request as p. idemKey is sent when not empty.
func send(client *http.Client, base string, p *principal, method, path string, body []byte, idemKey string) reply {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	rep := reply{start: time.Now()}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		rep.err = err
		return rep
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+p.key)
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := client.Do(req)
	if err == nil {
		rep.status, rep.header = resp.StatusCode, resp.Header
		rep.body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	rep.err = err
	rep.took = time.Since(rep.start)
	return rep
}
