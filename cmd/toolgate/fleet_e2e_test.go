package main

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testbrowser"
	"github.com/toolgate/toolgate/sealing"
	"github.com/toolgate/toolgate/storage/sqlite"
)

// sessionCookieName is the approval pages' session cookie.
const sessionCookieName = "toolgate_approver_session"

// fleetOf starts two server processes on one config, as two instances
// behind one load balancer would run, and returns them with their base
// URLs. Both listen on 127.0.0.1: a browser sends the cookies of one to
// the other, since cookies do not tell ports apart.
func fleetOf(t *testing.T, path string) (a, b *process, baseA, baseB string) {
	t.Helper()
	a, baseA = startServer(t, []string{"-offline", "-config", path})
	b, baseB = startServer(t, []string{"-offline", "-config", path})
	return a, b, baseA, baseB
}

// TestServerFleetSharesApprovalSessions runs two server processes on one
// SQLite file, and on one PostgreSQL database when
// TOOLGATE_TEST_POSTGRES_URL names one: a person signs in through one
// instance and approves through the other, in one browser (cookie jar,
// forms, CSRF token), and signing out through either ends the session on
// both at once, the old cookie included.
func TestServerFleetSharesApprovalSessions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		storage func(t *testing.T) string
	}{
		{"SQLite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "fleet.db") }},
		{"PostgreSQL", func(t *testing.T) string {
			dbURL := os.Getenv("TOOLGATE_TEST_POSTGRES_URL")
			if dbURL == "" {
				t.Skip("TOOLGATE_TEST_POSTGRES_URL is not set")
			}
			return dbURL
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testFleetSessions(t, c.storage(t))
		})
	}
}

func testFleetSessions(t *testing.T, storage string) {
	// Names of their own, so that runs sharing a database never meet.
	agentID, patID := randomKey(t, "agent-"), randomKey(t, "pat-")
	agentKey := randomKey(t, "tg_test_fleet_agent_")
	patKey := randomKey(t, "tg_test_fleet_pat_")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"storage":    storage,
		"principals": []any{map[string]any{"id": agentID, "apiKeys": []string{agentKey}, "approvalMode": "approver"}},
		"approvers":  []any{map[string]any{"id": patID, "keys": []string{patKey}, "principals": []string{agentID}}},
	})
	a, b, baseA, baseB := fleetOf(t, path)
	agent := client{t: t, base: baseA, key: agentKey}
	ask := func() string {
		t.Helper()
		quoteID, _, _ := agent.quote("earthquake-search")
		r := agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": map[string]any{"starttime": "2024-09-25"}})
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		return r.json(t)["id"].(string)
	}
	first := ask()

	// Signed in through A...
	pat := testbrowser.New(t)
	page := pat.Get(baseA+"/approvals/"+first).Form("key").Set("key", patKey).Submit("Sign in")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.True(t, page.HasForm("decision"), "signed in on A, the request shows: %s", page.Body)
	cookieURL, err := url.Parse(baseA + "/approvals")
	require.NoError(t, err)
	cookie := pat.Cookie(cookieURL, sessionCookieName)
	require.NotNil(t, cookie)
	token := cookie.Value
	if dbPath, ok := strings.CutPrefix(storage, "sqlite:"); ok {
		// While signed in, the file names the session by its token's
		// SHA-256 only.
		assertNotStored(t, dbPath, agentKey, patKey, token)
		assert.Contains(t, storedBytes(t, dbPath), sha256Hex(token))
	}

	// ...the person approves through B, its page and its form.
	page = pat.Get(baseB + "/approvals/" + first)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	require.True(t, page.HasForm("decision"), "B knows the session A began: %s", page.Body)
	assert.Contains(t, page.Text(), "Signed in as "+patID)
	page = page.Form("decision").Submit("Approve")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Contains(t, page.Text(), "decided by "+patID)
	agentOnB := client{t: t, base: baseB, key: agentKey}
	assert.Equal(t, "approved", agentOnB.do(http.MethodGet, "/v1/approval-requests/"+first, nil).json(t)["status"])

	// A form of B's page, sent to A, is the same session's: A decides too.
	second := ask()
	page = pat.Get(baseB + "/approvals/" + second)
	require.True(t, page.HasForm("decision"), page.Body)
	form := page.Form("decision")
	fromA, err := url.Parse(baseA + "/approvals/" + second)
	require.NoError(t, err)
	fields := url.Values{}
	for k, v := range form.Values {
		fields[k] = v
	}
	fields.Set("decision", "deny")
	page = pat.Post(fromA, "", fields)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.Equal(t, "denied", agent.do(http.MethodGet, "/v1/approval-requests/"+second, nil).json(t)["status"])

	// Signing out through B ends the session on A at once, and the old
	// cookie, presented again, is signed out too.
	third := ask()
	page = pat.Get(baseB + "/approvals").Form("csrf").Submit("Sign out")
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.True(t, page.HasForm("key"), "B shows the sign-in form")
	page = pat.Get(baseA + "/approvals/" + third)
	assert.True(t, page.HasForm("key"), "A shows the sign-in form at once: %s", page.Body)
	assert.False(t, page.HasForm("decision"))
	for _, base := range []string{baseA, baseB} {
		replay := testbrowser.New(t)
		u, err := url.Parse(base + "/approvals")
		require.NoError(t, err)
		replay.Client.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookieName, Value: token, Path: "/approvals"}})
		page := replay.Get(base + "/approvals/" + third)
		assert.True(t, page.HasForm("key"), "the old cookie is signed out on %s", base)
		forged := url.Values{"action": {"decide"}, "decision": {"approve"}, "csrf": {form.Values.Get("csrf")}}
		from, err := url.Parse(base + "/approvals/" + third)
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, replay.Post(from, "", forged).Status, "and decides nothing on %s", base)
	}
	assert.Equal(t, "pending", agent.do(http.MethodGet, "/v1/approval-requests/"+third, nil).json(t)["status"])

	// Signing in again through A and out through A ends it on B too.
	page = pat.Get(baseA+"/approvals").Form("key").Set("key", patKey).Submit("Sign in")
	require.True(t, pat.Get(baseB+"/approvals/"+third).HasForm("decision"))
	pat.Get(baseA + "/approvals").Form("csrf").Submit("Sign out")
	assert.True(t, pat.Get(baseB+"/approvals/"+third).HasForm("key"), "signed out on B")

	assert.Equal(t, 0, a.stop(exitTimeout))
	assert.Equal(t, 0, b.stop(exitTimeout))
	secrets := []string{agentKey, patKey, token}
	if dbPath, ok := strings.CutPrefix(storage, "sqlite:"); ok {
		assertNotStored(t, dbPath, agentKey, patKey, token)
		// The sealing key the first instance generated and kept for both.
		st, err := sqlite.Open(context.Background(), dbPath, nil)
		require.NoError(t, err)
		key, err := st.Secret(context.Background(), sealing.FleetSecretName, []byte("kept already: never stored"))
		require.NoError(t, err)
		require.NoError(t, st.Close())
		require.Len(t, key, sealing.KeySize)
		secrets = append(secrets, string(key), sealing.EncodeKey(key), base64.StdEncoding.EncodeToString(key))
	} else {
		assertNoTokenInPostgres(t, storage, token)
	}
	for _, p := range []*process{a, b} {
		out := p.stdout.String() + p.stderr.String()
		for _, secret := range secrets {
			assert.NotContains(t, out, secret, "no key, session token or sealing key in any output")
		}
	}
}

// assertNotStored fails when any of secrets is in the SQLite file, its
// write-ahead log or its shared memory.
func assertNotStored(t *testing.T, dbPath string, secrets ...string) {
	t.Helper()
	stored := storedBytes(t, dbPath)
	for _, s := range secrets {
		assert.NotContains(t, stored, s, "a secret is in the store in clear")
	}
}

// storedBytes is everything the SQLite file at dbPath holds: the file, its
// write-ahead log and its shared memory.
func storedBytes(t *testing.T, dbPath string) string {
	t.Helper()
	var stored []byte
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if b, err := os.ReadFile(dbPath + suffix); err == nil {
			stored = append(stored, b...)
		}
	}
	require.NotEmpty(t, stored)
	return string(stored)
}

// assertNoTokenInPostgres fails when a session of the database holds the
// token in clear rather than its SHA-256.
func assertNoTokenInPostgres(t *testing.T, dbURL, token string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var found int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM approver_sessions WHERE id = $1 OR csrf = $1 OR approver = $1`, token).Scan(&found))
	assert.Zero(t, found, "the session token is in the database in clear")
}

// TestServerLimitsGuessing runs two server processes on one SQLite file:
// wrong approver keys are counted across both, the 11th in a window from
// one address gets 429 with Retry-After, and then the right key from that
// address too, on the page, the API and MCP, until the window has passed
// (10 s here, a minute by default); an agent asking for
// approvals faster than its limit gets 429 rate_limited; 20 identical
// approval requests sent at once give one request. No key, session token
// or sealing key is in any answer, log line, metric or the store.
func TestServerLimitsGuessing(t *testing.T) {
	t.Parallel()
	agentKey := randomKey(t, "tg_test_guess_agent_")
	patKey := randomKey(t, "tg_test_guess_pat_")
	sealingKey := base64.RawURLEncoding.EncodeToString([]byte("toolgate-distinctive-sealing-key")) // 32 bytes
	dbPath := filepath.Join(t.TempDir(), "guess.db")
	path := writeConfig(t, map[string]any{
		"listen":        "127.0.0.1:0",
		"metricsListen": "127.0.0.1:0",
		"storage":       "sqlite:" + dbPath,
		"sealingKeys":   []string{sealingKey},
		"limits": map[string]any{
			"approvalRequests": map[string]any{"max": 25, "window": "1m"},
			// Short, so that the test sees it pass; long enough for eleven sign-ins.
			"failedAuth": map[string]any{"window": "10s"},
		},
		"principals": []any{map[string]any{"id": "agent", "apiKeys": []string{agentKey}, "approvalMode": "approver"}},
		"approvers":  []any{map[string]any{"id": "pat", "keys": []string{patKey}, "principals": []string{"agent"}}},
	})
	a, b, baseA, baseB := fleetOf(t, path)
	var answers []string // every body and header the servers sent
	keep := func(status int, header http.Header, body string) {
		answers = append(answers, strconv.Itoa(status)+" "+body)
		for k, v := range header {
			if k != "Set-Cookie" { // the session cookie carries its token by design
				answers = append(answers, k+": "+strings.Join(v, ", "))
			}
		}
	}

	// 20 identical approval requests at once, through both instances: one request.
	agent := client{t: t, base: baseA, key: agentKey}
	quoteID, _, _ := agent.quote("earthquake-search")
	input := map[string]any{"starttime": "2024-09-25"}
	ids := make([]string, 20)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			c := agent
			if i%2 == 1 {
				c.base = baseB
			}
			r, err := c.send(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": input})
			if err == nil && (r.status == http.StatusCreated || r.status == http.StatusOK) {
				ids[i] = r.json(t)["id"].(string)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		require.NotEmpty(t, id, "request %d was answered", i)
		assert.Equal(t, ids[0], id, "request %d is the one request", i)
	}
	pat := client{t: t, base: baseB, key: patKey}
	r := pat.do(http.MethodGet, "/v1/approval-requests?status=all", nil)
	keep(r.status, r.header, string(r.body))
	assert.Len(t, r.json(t)["approvalRequests"], 1, "%s", r.body)

	// Past 25 approval requests in a minute (the 20 above count), 429.
	for i := range 5 {
		r := agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": map[string]any{"starttime": "2024-09-2" + strconv.Itoa(i)}})
		require.Equal(t, http.StatusCreated, r.status, "request %d: %s", 21+i, r.body)
	}
	r = agent.do(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": quoteID, "input": map[string]any{"starttime": "2024-09-01"}})
	keep(r.status, r.header, string(r.body))
	require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
	assert.Equal(t, "rate_limited", r.json(t)["error"].(map[string]any)["code"])
	assert.NotEmpty(t, r.header.Get("Retry-After"))

	// Ten wrong approver keys, through both instances' pages: each refused as wrong.
	guesser := testbrowser.New(t)
	for i := range 10 {
		base := []string{baseA, baseB}[i%2]
		page := guesser.Get(base+"/approvals").Form("key").Set("key", randomKey(t, "tg_guess_")).Submit("Sign in")
		keep(page.Status, page.Header, page.Body)
		require.Equal(t, http.StatusUnauthorized, page.Status, "guess %d", i+1)
	}
	// The 11th gets 429 with Retry-After, on either instance...
	page := guesser.Get(baseA+"/approvals").Form("key").Set("key", randomKey(t, "tg_guess_")).Submit("Sign in")
	keep(page.Status, page.Header, page.Body)
	require.Equal(t, http.StatusTooManyRequests, page.Status, page.Body)
	retry, err := strconv.Atoi(page.Header.Get("Retry-After"))
	require.NoError(t, err)
	assert.True(t, retry > 0 && retry <= 10, "Retry-After: %d", retry)
	limitedAt := time.Now()
	assert.Contains(t, page.Text(), "Too many failed sign-ins")

	// ...and then the right key from that address too, on the page, the API and MCP.
	page = guesser.Get(baseB+"/approvals").Form("key").Set("key", patKey).Submit("Sign in")
	keep(page.Status, page.Header, page.Body)
	assert.Equal(t, http.StatusTooManyRequests, page.Status, "the right key on the page")
	assert.False(t, page.HasForm("decision"))
	r = pat.do(http.MethodGet, "/v1/approval-requests", nil)
	keep(r.status, r.header, string(r.body))
	assert.Equal(t, http.StatusTooManyRequests, r.status, "the right key on the API: %s", r.body)
	assert.NotEmpty(t, r.header.Get("Retry-After"))
	r = agent.do(http.MethodPost, "/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"},
		"Accept", "application/json, text/event-stream")
	keep(r.status, r.header, string(r.body))
	assert.Equal(t, http.StatusTooManyRequests, r.status, "the right key over MCP: %s", r.body)
	assert.NotEmpty(t, r.header.Get("Retry-After"))

	// Once the window has passed, the right key works again, through either instance.
	time.Sleep(time.Until(limitedAt.Add(time.Duration(retry)*time.Second + 100*time.Millisecond)))
	page = guesser.Get(baseB+"/approvals").Form("key").Set("key", patKey).Submit("Sign in")
	keep(page.Status, page.Header, page.Body)
	require.Equal(t, http.StatusOK, page.Status, page.Body)
	assert.True(t, page.HasForm("csrf"), "signed in")
	r = pat.do(http.MethodGet, "/v1/approval-requests", nil)
	assert.Equal(t, http.StatusOK, r.status, "%s", r.body)

	// Metrics count them, and show no secret.
	metricsURL := strings.TrimPrefix(a.waitLine("toolgate metrics on ", 10*time.Second), "toolgate metrics on ")
	resp, err := http.Get(metricsURL)
	require.NoError(t, err)
	metrics := readAll(t, resp)
	assert.Contains(t, metrics, `toolgate_auth_failures_total{surface="approval_page"}`)
	assert.Contains(t, metrics, `toolgate_auth_limited_total{surface="approval_page"}`)
	assert.Contains(t, metrics, `toolgate_approval_requests_total{decision="limited"} 1`)
	assert.Contains(t, metrics, `toolgate_approval_requests_total{decision="same_pending"}`)

	assert.Equal(t, 0, a.stop(exitTimeout))
	assert.Equal(t, 0, b.stop(exitTimeout))
	rawSealing, err := base64.RawURLEncoding.DecodeString(sealingKey)
	require.NoError(t, err)
	secrets := []string{agentKey, patKey, sealingKey, string(rawSealing)}
	out := a.stdout.String() + a.stderr.String() + b.stdout.String() + b.stderr.String() + metrics + strings.Join(answers, "\n")
	for _, s := range secrets {
		assert.NotContains(t, out, s, "no key in any answer, log line or metric")
	}
	assertNotStored(t, dbPath, secrets...)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
