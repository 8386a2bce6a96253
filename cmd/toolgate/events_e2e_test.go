package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testidp"
	"github.com/toolgate/toolgate/oauth"
	"github.com/toolgate/toolgate/server"
	"github.com/toolgate/toolgate/tools/goalprovider"
	"github.com/toolgate/toolgate/webhook"
)

// eventSink is a webhook receiver for the outbox tests (section 28). It
// checks every delivery's signature with the config's secret, answers 503
// while down, and otherwise answers 204 after delay, keeping the first
// delivery of each webhook-id and counting the repeats.
type eventSink struct {
	key   []byte
	delay time.Duration
	down  atomic.Bool

	mu        sync.Mutex
	first     map[string]time.Time      // webhook-id -> its first 2xx answer
	events    map[string]map[string]any // webhook-id -> its body
	delivered int                       // 2xx answers, repeats included
	refused   int                       // 503 answers while down
	bad       []string                  // deliveries not signed, or not as their id says
}

// newEventSink starts a receiver, down or up, and returns it with the URL
// to configure as approvals.webhookUrl.
func newEventSink(t *testing.T, down bool, delay time.Duration) (*eventSink, string) {
	t.Helper()
	key, err := webhook.ParseSecret(webhookSecret)
	require.NoError(t, err)
	s := &eventSink{key: key, delay: delay, first: map[string]time.Time{}, events: map[string]map[string]any{}}
	s.down.Store(down)
	srv := httptest.NewServer(s)
	// Registered before the servers start, so closed after they stop.
	t.Cleanup(srv.Close)
	return s, srv.URL + "/hooks"
}

func (s *eventSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	id := r.Header.Get("webhook-id")
	secs, perr := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	var ev map[string]any
	ok := err == nil && perr == nil &&
		webhook.Verify(s.key, id, time.Unix(secs, 0), body, r.Header.Get("webhook-signature")) &&
		json.Unmarshal(body, &ev) == nil
	if typ, isText := ev["type"].(string); !ok || !isText || !strings.HasPrefix(id, typ+":") {
		s.mu.Lock()
		s.bad = append(s.bad, fmt.Sprintf("%s %q: %s", id, r.Header.Get("webhook-signature"), body))
		s.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if s.down.Load() {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-r.Context().Done():
			return
		}
	}
	s.mu.Lock()
	s.delivered++
	if _, seen := s.first[id]; !seen {
		s.first[id] = time.Now()
		s.events[id] = ev
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// sinkFigures is what a receiver has seen.
type sinkFigures struct {
	ids       map[string]time.Time
	delivered int
	refused   int
	bad       []string
}

func (s *eventSink) figures() sinkFigures {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make(map[string]time.Time, len(s.first))
	for id, at := range s.first {
		ids[id] = at
	}
	return sinkFigures{ids: ids, delivered: s.delivered, refused: s.refused, bad: slices.Clone(s.bad)}
}

// event is the body of webhook-id id's first delivery.
func (s *eventSink) event(id string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events[id]
}

// waitFor waits until every id in want has arrived, or until deadline; it
// returns the ids still missing, sorted.
func (s *eventSink) waitFor(want []string, deadline time.Time) []string {
	for {
		got := s.figures().ids
		var missing []string
		for _, id := range want {
			if _, ok := got[id]; !ok {
				missing = append(missing, id)
			}
		}
		slices.Sort(missing)
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lastArrival is when the last of ids first arrived.
func lastArrival(got map[string]time.Time, ids []string) time.Time {
	var last time.Time
	for _, id := range ids {
		if at := got[id]; at.After(last) {
			last = at
		}
	}
	return last
}

// eachDurableStore runs test on a SQLite file and, when
// TOOLGATE_TEST_POSTGRES_URL names one, on a PostgreSQL database of its
// own, as parallel subtests; each starts its own two instances.
func eachDurableStore(t *testing.T, test func(t *testing.T, storage string)) {
	cases := []struct {
		name    string
		storage func(t *testing.T) string
	}{
		{"SQLite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "toolgate.db") }},
		{"PostgreSQL", func(t *testing.T) string {
			dbURL := os.Getenv("TOOLGATE_TEST_POSTGRES_URL")
			if dbURL == "" {
				t.Skip("TOOLGATE_TEST_POSTGRES_URL is not set")
			}
			return ownDatabase(t, dbURL)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			test(t, c.storage(t))
		})
	}
}

// outboxEvents runs toolgate events list -json on the config at path, with
// -status status unless it is "", and returns the events by id: those
// whose line holds mine, the run's own suffix, which every event of its
// causes does (in its budget's id or its principal's). A database shared
// with other runs holds theirs too.
func outboxEvents(t *testing.T, path, status, mine string) map[string]eventJSON {
	t.Helper()
	args := []string{"events", "list", "-json", "-config", path}
	if status != "" {
		args = append(args, "-status", status)
	}
	code, out := runCLI(t, nil, args...)
	require.Equal(t, 0, code, "toolgate events list: %s", out)
	events := map[string]eventJSON{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, mine) {
			continue
		}
		var e eventJSON
		require.NoError(t, json.Unmarshal([]byte(line), &e), "a line of events list -json: %s", line)
		_, twice := events[e.ID]
		require.False(t, twice, "event %s listed twice", e.ID)
		events[e.ID] = e
	}
	return events
}

// sortedKeys are m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// assertNoSecrets checks that no secret appears in any server's output.
func assertNoSecrets(t *testing.T, procs []*process, secrets ...string) {
	t.Helper()
	var out strings.Builder
	for _, p := range procs {
		out.WriteString(p.stdout.String())
		out.WriteString(p.stderr.String())
	}
	secrets = append(secrets, strings.TrimPrefix(webhookSecret, "whsec_"))
	for _, s := range secrets {
		assert.NotContains(t, out.String(), s, "no key, token or webhook secret in any output")
	}
}

// hangUpProvider is goal-data's provider, except that a call whose goal
// starts with "hang up" is read and then met with a closed connection, as
// a provider that dies mid-call: for a tool that is not retry-safe, the
// call is ambiguous.
func hangUpProvider(t *testing.T) *httptest.Server {
	goal := goalprovider.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in struct {
			Goal string `json:"goal"`
		}
		if json.Unmarshal(body, &in) == nil && strings.HasPrefix(in.Goal, "hang up") {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		goal.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// budgetWindowDay is the first day of a budget's daily window, as GET
// /v1/budgets shows it to an approver, and its used amount: the store's
// own account of the budget, which the events' ids are built from.
func budgetWindowDay(t *testing.T, pat client, budget string) (firstDay, used string) {
	t.Helper()
	r := pat.do(http.MethodGet, "/v1/budgets", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var list struct {
		Budgets []struct {
			ID      string `json:"id"`
			Windows map[string]struct {
				UsedUSD  string    `json:"usedUsd"`
				ResetsAt time.Time `json:"resetsAt"`
			} `json:"windows"`
		} `json:"budgets"`
	}
	require.NoError(t, json.Unmarshal(r.body, &list))
	for _, b := range list.Budgets {
		if b.ID == budget {
			daily, ok := b.Windows["daily"]
			require.True(t, ok, "the budget has a daily window: %s", r.body)
			// The budget's time zone is UTC: its day ends at the next midnight.
			return daily.ResetsAt.UTC().AddDate(0, 0, -1).Format(time.DateOnly), daily.UsedUSD
		}
	}
	t.Fatalf("budget %s is not listed: %s", budget, r.body)
	return "", ""
}

// budgetEventIDs are the events of a daily budget whose 50% alert was
// crossed and whose next call was refused short of its limit: the 50%
// crossing, the 100% alert the refusal sends, and budget.limit_reached.
func budgetEventIDs(budget, day string) []string {
	return []string{
		fmt.Sprintf("budget.threshold:%s:daily:0.5:%s", budget, day),
		fmt.Sprintf("budget.threshold:%s:daily:1:%s", budget, day),
		fmt.Sprintf("budget.limit_reached:%s:daily:%s", budget, day),
	}
}

// spendToRefusal makes spender's three calls of goal-data (0.1000 each
// with feeRate 0) against a daily budget of 0.2500, alternating the
// instances: two complete, the second crossing 50%, and the third is
// refused by the budget short of its limit. It returns an error rather
// than failing, for a goroutine of its own.
func spendToRefusal(spender client, bases []string, budget string, step func(i int)) error {
	for i := range 3 {
		if step != nil {
			step(i)
		}
		spender.base = bases[i%2]
		r, err := spender.send(http.MethodPost, "/v1/tools/goal-data/quote", nil)
		if err != nil || r.status != http.StatusCreated {
			return fmt.Errorf("quote %d: %d %s %v", i, r.status, r.body, err)
		}
		var q struct {
			Quote struct {
				ID             string `json:"id"`
				ManifestDigest string `json:"manifestDigest"`
			} `json:"quote"`
		}
		if err := json.Unmarshal(r.body, &q); err != nil {
			return err
		}
		r, err = spender.sendCall("goal-data", q.Quote.ID, q.Quote.ManifestDigest, fmt.Sprintf("spend-%d", i),
			map[string]any{"goal": fmt.Sprintf("spend %d", i), "step": 1})
		if err != nil {
			return err
		}
		var body struct {
			Status string `json:"status"`
			Error  struct {
				Code   string `json:"code"`
				Budget struct {
					ID     string `json:"id"`
					Window string `json:"window"`
				} `json:"budget"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			return fmt.Errorf("call %d: %d %s", i, r.status, r.body)
		}
		switch {
		case i < 2 && (r.status != http.StatusOK || body.Status != "completed"):
			return fmt.Errorf("call %d is within the budget, yet: %d %s", i, r.status, r.body)
		case i == 2 && (r.status != http.StatusForbidden || body.Error.Code != "spend_limit_exceeded" ||
			body.Error.Budget.ID != budget || body.Error.Budget.Window != "daily"):
			return fmt.Errorf("call %d would pass the budget's day, yet: %d %s", i, r.status, r.body)
		}
	}
	return nil
}

// askApproval quotes goal-data and asks for an approval of a call with
// input, through c, and returns the request's id.
func askApproval(c client, input any) (string, error) {
	r, err := c.send(http.MethodPost, "/v1/tools/goal-data/quote", nil)
	if err != nil || r.status != http.StatusCreated {
		return "", fmt.Errorf("quote: %d %s %v", r.status, r.body, err)
	}
	var q struct {
		Quote struct {
			ID string `json:"id"`
		} `json:"quote"`
	}
	if err := json.Unmarshal(r.body, &q); err != nil {
		return "", err
	}
	r, err = c.send(http.MethodPost, "/v1/approval-requests", map[string]any{"quoteId": q.Quote.ID, "input": input})
	if err != nil || r.status != http.StatusCreated {
		return "", fmt.Errorf("approval request: %d %s %v", r.status, r.body, err)
	}
	var req struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.body, &req); err != nil || req.ID == "" {
		return "", fmt.Errorf("approval request: %s %v", r.body, err)
	}
	return req.ID, nil
}

// receiverDown is how long TestServerEventsArriveAfterTheReceiverWasDown's
// receiver answers 503.
const receiverDown = 90 * time.Second

// TestServerEventsArriveAfterTheReceiverWasDown runs two server processes
// on one SQLite file, and on one PostgreSQL database when
// TOOLGATE_TEST_POSTGRES_URL names one, while their webhook receiver is
// down (503) for 90 s. Through both instances, approval requests are made
// and decided (approved and denied), a budget's 50% alert is crossed, a
// call is refused by the budget short of its limit (budget.limit_reached
// and the 100% alert) and a call ends ambiguous. Once the receiver is back
// every event arrives, signed, within the backoff's reach: exactly the
// events of the causes the store records (the approval requests, the
// ambiguous execution, the budget's window), which the outbox lists, first
// pending and then delivered.
func TestServerEventsArriveAfterTheReceiverWasDown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the receiver is down for 90 s")
	}
	eachDurableStore(t, testEventsAfterDown)
}

func testEventsAfterDown(t *testing.T, storage string) {
	untilPastMidnight(t, 2*time.Minute) // the budget's window is a day
	sink, hookURL := newEventSink(t, true, 0)
	downSince := time.Now()
	provider := hangUpProvider(t)

	// Ids of their own, so that runs sharing a database never meet.
	suffix := randomKey(t, "")[:12]
	agentID, spenderID, riskyID, patID := "agent-"+suffix, "spender-"+suffix, "risky-"+suffix, "pat-"+suffix
	budget := "team-" + suffix
	agentKey := randomKey(t, "tg_test_events_agent_")
	spenderKey := randomKey(t, "tg_test_events_spender_")
	riskyKey := randomKey(t, "tg_test_events_risky_")
	patKey := randomKey(t, "tg_test_events_pat_")
	path := writeConfig(t, map[string]any{
		"listen":          "127.0.0.1:0",
		"storage":         storage,
		"feeRate":         "0", // each goal-data call is then its price, 0.1000
		"upstreamTimeout": "2s",
		"principals": []any{
			map[string]any{"id": agentID, "apiKeys": []string{agentKey}, "approvalMode": "approver"},
			map[string]any{"id": spenderID, "apiKeys": []string{spenderKey}},
			map[string]any{"id": riskyID, "apiKeys": []string{riskyKey}},
		},
		"approvers": []any{map[string]any{"id": patID, "keys": []string{patKey}, "principals": []string{agentID}}},
		"approvals": map[string]any{"webhookUrl": hookURL, "webhookSecret": webhookSecret},
		"upstreams": map[string]string{"goal-data": provider.URL},
		// Not retry-safe: a call its provider hangs up on is ambiguous.
		"trust": map[string]any{"goal-data": map[string]any{"paymentVerified": true, "endpointVerified": true, "retrySafe": false}},
		"budgets": []any{map[string]any{"id": budget, "name": "Team", "members": []string{spenderID},
			"dailyLimitUsd": "0.2500", "alerts": []float64{0.5, 1}, "timeZone": "UTC", "approvers": []string{patID}}},
	})
	a, baseA := startServer(t, []string{"-config", path})
	b, baseB := startServer(t, []string{"-config", path})
	bases := []string{baseA, baseB}

	// Four approval requests, asked through either instance and decided
	// through the other: two approved, two denied.
	agent := client{t: t, key: agentKey}
	pat := client{t: t, key: patKey}
	decisions := map[string]string{}
	for i := range 4 {
		agent.base = bases[i%2]
		id, err := askApproval(agent, map[string]any{"goal": fmt.Sprintf("ask %d", i), "step": 1})
		require.NoError(t, err)
		pat.base = bases[(i+1)%2]
		decision, want := "approve", "approved"
		if i%2 == 1 {
			decision, want = "deny", "denied"
		}
		r := pat.do(http.MethodPost, "/v1/approval-requests/"+id+"/"+decision, nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		require.Equal(t, want, r.json(t)["status"], "%s", r.body)
		decisions[id] = want
	}

	// The budget: 50% crossed, then a call refused short of the limit.
	require.NoError(t, spendToRefusal(client{t: t, key: spenderKey}, bases, budget, nil))

	// A call the provider hangs up on: ambiguous.
	risky := client{t: t, base: baseB, key: riskyKey}
	quoteID, digest, _ := risky.quote("goal-data")
	r := risky.call("goal-data", quoteID, digest, "risky-1", map[string]any{"goal": "hang up on me", "step": 1})
	require.Equal(t, "ambiguous", r.json(t)["status"], "%d %s", r.status, r.body)
	ambiguousID := r.header.Get("Toolgate-Execution-Id")
	require.NotEmpty(t, ambiguousID, "%v", r.header)

	// What the store records as the events' causes, through the API.
	pat.base = baseA
	r = pat.do(http.MethodGet, "/v1/approval-requests?status=all&limit=100", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var requests struct {
		ApprovalRequests []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"approvalRequests"`
	}
	require.NoError(t, json.Unmarshal(r.body, &requests))
	var want []string
	listed := map[string]string{}
	for _, req := range requests.ApprovalRequests {
		listed[req.ID] = req.Status
		want = append(want, "approval_request.created:"+req.ID, "approval_request.decided:"+req.ID)
	}
	require.Equal(t, decisions, listed, "the approver lists the requests decided: %s", r.body)

	risky.base = baseA
	r = risky.do(http.MethodGet, "/v1/executions?status=ambiguous", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var executions struct {
		Executions []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"executions"`
	}
	require.NoError(t, json.Unmarshal(r.body, &executions))
	require.Len(t, executions.Executions, 1, "%s", r.body)
	require.Equal(t, ambiguousID, executions.Executions[0].ID)
	want = append(want, "execution.ambiguous:"+ambiguousID)

	day, used := budgetWindowDay(t, pat, budget)
	require.Equal(t, "0.2000", used, "two calls charged, the third refused")
	want = append(want, budgetEventIDs(budget, day)...)
	slices.Sort(want)

	// The outbox holds exactly those, waiting; the receiver has had none.
	pending := outboxEvents(t, path, "", suffix)
	assert.Equal(t, want, sortedKeys(pending), "the outbox holds one event per cause")
	for id, e := range pending {
		assert.Equal(t, "pending", e.Status, "%s", id)
	}
	require.Empty(t, sink.figures().ids, "nothing is delivered while the receiver is down")

	// The receiver comes back after 90 s down.
	time.Sleep(time.Until(downSince.Add(receiverDown)))
	before := sink.figures()
	sink.down.Store(false)
	up := time.Now()
	t.Logf("the receiver was down %s and refused %d attempts of %d events", up.Sub(downSince).Round(time.Second), before.refused, len(want))

	// The backoff after 90 s down is at most about a minute; 5 minutes is
	// the deadline of a broken retry, not a slow one.
	missing := sink.waitFor(want, up.Add(5*time.Minute))
	got := sink.figures()
	require.Empty(t, missing, "every event arrives once the receiver answers")
	assert.Empty(t, got.bad, "every delivery is signed with the config's secret")
	assert.Equal(t, want, sortedKeys(got.ids), "no event the store has no cause for")
	last := lastArrival(got.ids, want)
	t.Logf("%d events arrived %s after the receiver came back (%s after it went down); %d deliveries, %d repeats",
		len(want), last.Sub(up).Round(100*time.Millisecond), last.Sub(downSince).Round(time.Second), got.delivered, got.delivered-len(want))

	// What arrived is what happened.
	for id, status := range decisions {
		ev := sink.event("approval_request.decided:" + id)
		assert.Equal(t, "approval_request.decided", ev["type"])
		assert.Equal(t, status, ev["data"].(map[string]any)["status"], "%v", ev)
		ev = sink.event("approval_request.created:" + id)
		assert.Equal(t, id, ev["data"].(map[string]any)["id"], "%v", ev)
	}
	ev := sink.event("execution.ambiguous:" + ambiguousID)
	assert.Equal(t, ambiguousID, ev["data"].(map[string]any)["id"], "%v", ev)
	assert.Equal(t, "ambiguous", ev["data"].(map[string]any)["status"], "%v", ev)
	ev = sink.event(budgetEventIDs(budget, day)[2])
	data := ev["data"].(map[string]any)
	assert.Equal(t, budget, data["budget"].(map[string]any)["id"], "%v", ev)
	assert.Equal(t, "daily", data["window"])
	assert.Equal(t, "0.2000", data["usedUsd"])
	assert.Equal(t, "0.2500", data["limitUsd"])
	assert.Equal(t, "0.1000", data["requestedUsd"])
	assert.Equal(t, day, data["periodStart"])

	// And the outbox says so: the same events, delivered. An attempt is
	// recorded a moment after the receiver's answer.
	var delivered map[string]eventJSON
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		delivered = outboxEvents(t, path, "", suffix)
		done := true
		for _, e := range delivered {
			done = done && e.Status == "delivered"
		}
		if done || time.Now().After(deadline) {
			break
		}
	}
	assert.Equal(t, want, sortedKeys(delivered))
	for id, e := range delivered {
		assert.Equal(t, "delivered", e.Status, "%s: %+v", id, e)
	}

	assert.Equal(t, 0, a.stop(exitTimeout))
	assert.Equal(t, 0, b.stop(exitTimeout))
	assertNoSecrets(t, []*process{a, b}, agentKey, spenderKey, riskyKey, patKey)
	a.logLines()
	b.logLines()
}

// Flood sizes: 40 people, 25 approval requests each, under the default
// limit of 30 a minute for one principal.
const (
	floodUsers    = 40
	floodRequests = 25
)

// TestServerEventsSurviveAFlood runs two server processes on one SQLite
// file, and on one PostgreSQL database when TOOLGATE_TEST_POSTGRES_URL
// names one: 40 people signed in with access tokens make 1,000 approval
// requests at once through both, while their receiver takes 200 ms over
// each delivery and a budget's alerts and limit are reached in the midst
// of it. Every event arrives, the alerts included, within minutes.
func TestServerEventsSurviveAFlood(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("1,000 approval requests through two servers")
	}
	eachDurableStore(t, testEventsFlood)
}

func testEventsFlood(t *testing.T, storage string) {
	untilPastMidnight(t, 2*time.Minute) // the budget's window is a day
	sink, hookURL := newEventSink(t, false, 200*time.Millisecond)
	const audience = "https://toolgate.example/mcp"
	idp := testidp.Start(t, audience)

	suffix := randomKey(t, "")[:12]
	spenderID, patID, budget := "spender-"+suffix, "pat-"+suffix, "team-"+suffix
	spenderKey := randomKey(t, "tg_test_flood_spender_")
	patKey := randomKey(t, "tg_test_flood_pat_")
	var users []string
	principals := []any{map[string]any{"id": spenderID, "apiKeys": []string{spenderKey}}}
	for i := range floodUsers {
		id := fmt.Sprintf("user-%02d-%s", i, suffix)
		users = append(users, id)
		idp.AddClient(testidp.Client{ID: id, Secret: "secret-" + id, Scopes: []string{oauth.DefaultCallScope}})
		// People the config names, without keys: they call with tokens,
		// and ask an approver for every call.
		principals = append(principals, map[string]any{"id": id, "approvalMode": "approver"})
	}
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"storage":    storage,
		"feeRate":    "0",
		"oauth":      map[string]any{"issuer": idp.Issuer, "audience": audience},
		"principals": principals,
		"approvers":  []any{map[string]any{"id": patID, "keys": []string{patKey}, "principals": users}},
		"approvals":  map[string]any{"webhookUrl": hookURL, "webhookSecret": webhookSecret},
		"budgets": []any{map[string]any{"id": budget, "name": "Team", "members": []string{spenderID},
			"dailyLimitUsd": "0.2500", "alerts": []float64{0.5, 1}, "timeZone": "UTC", "approvers": []string{patID}}},
	})
	a, b, baseA, baseB := fleetOf(t, path)
	bases := []string{baseA, baseB}
	tokens := make([]string, len(users))
	for i, id := range users {
		tokens[i] = idp.Token(t, id)
	}

	start := time.Now()
	var (
		mu      sync.Mutex
		ids     []string
		errs    []error
		created atomic.Int64
		wg      sync.WaitGroup
	)
	for u := range users {
		wg.Go(func() {
			for j := range floodRequests {
				c := client{t: t, base: bases[(u+j)%2], key: tokens[u]}
				id, err := askApproval(c, map[string]any{"goal": fmt.Sprintf("flood %d %d", u, j), "step": 1})
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("%s's request %d: %w", users[u], j, err))
				} else {
					ids = append(ids, id)
				}
				mu.Unlock()
				created.Add(1)
			}
		})
	}
	// The budget's calls in the midst of the flood: after a quarter, a
	// half and three quarters of the requests.
	var spendErr error
	wg.Go(func() {
		spendErr = spendToRefusal(client{t: t, key: spenderKey}, bases, budget, func(i int) {
			for created.Load() < int64((i+1)*floodUsers*floodRequests/4) {
				time.Sleep(10 * time.Millisecond)
			}
		})
	})
	wg.Wait()
	madeIn := time.Since(start)
	require.Empty(t, errs, "every approval request is taken")
	require.NoError(t, spendErr)
	require.Len(t, ids, floodUsers*floodRequests)

	pat := client{t: t, base: baseB, key: patKey}
	day, used := budgetWindowDay(t, pat, budget)
	require.Equal(t, "0.2000", used)
	want := budgetEventIDs(budget, day)
	for _, id := range ids {
		want = append(want, "approval_request.created:"+id)
	}
	slices.Sort(want)

	// Minutes at most: 16 deliveries at once across the two instances,
	// 200 ms each, is about 15 s of sending.
	missing := sink.waitFor(want, start.Add(4*time.Minute))
	got := sink.figures()
	require.Empty(t, missing, "every event arrives (%d of %d missing)", len(missing), len(want))
	assert.Empty(t, got.bad, "every delivery is signed with the config's secret")
	assert.Equal(t, want, sortedKeys(got.ids), "no event without its cause")
	last := lastArrival(got.ids, want)
	t.Logf("%d approval requests from %d people made in %s; %d events (%d of the budget) all arrived %s after the first request, %s after the last; %d deliveries, %d repeats",
		len(ids), floodUsers, madeIn.Round(100*time.Millisecond), len(want), len(want)-len(ids),
		last.Sub(start).Round(100*time.Millisecond), last.Sub(start.Add(madeIn)).Round(100*time.Millisecond),
		got.delivered, got.delivered-len(want))

	// Nothing left waiting or failed in the outbox, once the last
	// attempts are recorded.
	var pending map[string]eventJSON
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if pending = outboxEvents(t, path, "pending", suffix); len(pending) == 0 || time.Now().After(deadline) {
			break
		}
	}
	assert.Empty(t, sortedKeys(pending), "no event still pending")
	assert.Empty(t, sortedKeys(outboxEvents(t, path, "failed", suffix)), "no event failed")

	assert.Equal(t, 0, a.stop(exitTimeout))
	assert.Equal(t, 0, b.stop(exitTimeout))
	assertNoSecrets(t, []*process{a, b}, append([]string{spenderKey, patKey}, tokens...)...)
}

// TestServerEventDeliveredAfterKill9 runs two server processes on one
// SQLite file, and on one PostgreSQL database when
// TOOLGATE_TEST_POSTGRES_URL names one. While the receiver is down, an
// approval request made through instance A is refused delivery; A is
// killed with SIGKILL, the receiver comes back, and instance B delivers
// the event A caused, which A never could.
func TestServerEventDeliveredAfterKill9(t *testing.T) {
	t.Parallel()
	eachDurableStore(t, testEventAfterKill9)
}

func testEventAfterKill9(t *testing.T, storage string) {
	sink, hookURL := newEventSink(t, true, 0)
	suffix := randomKey(t, "")[:12]
	agentID, patID := "agent-"+suffix, "pat-"+suffix
	agentKey := randomKey(t, "tg_test_kill9_agent_")
	patKey := randomKey(t, "tg_test_kill9_pat_")
	path := writeConfig(t, map[string]any{
		"listen":     "127.0.0.1:0",
		"storage":    storage,
		"principals": []any{map[string]any{"id": agentID, "apiKeys": []string{agentKey}, "approvalMode": "approver"}},
		"approvers":  []any{map[string]any{"id": patID, "keys": []string{patKey}, "principals": []string{agentID}}},
		"approvals":  map[string]any{"webhookUrl": hookURL, "webhookSecret": webhookSecret},
	})
	a, b, baseA, _ := fleetOf(t, path)

	id, err := askApproval(client{t: t, base: baseA, key: agentKey}, map[string]any{"goal": "outlive my gateway", "step": 1})
	require.NoError(t, err)
	eventID := "approval_request.created:" + id

	// Once a delivery was tried and refused, and while the next attempt
	// is over a second away (so that no instance is in the middle of
	// one), A is killed. Were A holding the event's lease, B would wait
	// for the lease (30 s) to lapse: slower, but delivered all the same.
	deadline := time.Now().Add(30 * time.Second)
	for {
		e, ok := outboxEvents(t, path, "", suffix)[eventID]
		require.True(t, ok, "the request's event is in the outbox")
		require.Equal(t, "pending", e.Status)
		if e.Attempts >= 1 && e.NextAttemptAt != nil && time.Until(*e.NextAttemptAt) > time.Second {
			break
		}
		require.True(t, time.Now().Before(deadline), "no attempt refused by the receiver in 30 s: %+v", e)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	a.wait(exitTimeout)
	require.Empty(t, sink.figures().ids, "A never delivered the event: the receiver was down while it lived")

	sink.down.Store(false)
	missing := sink.waitFor([]string{eventID}, killed.Add(60*time.Second))
	got := sink.figures()
	require.Empty(t, missing, "B delivers the event A caused")
	assert.Empty(t, got.bad)
	t.Logf("the event arrived %s after A was killed, from B, after %d refused attempts",
		got.ids[eventID].Sub(killed).Round(100*time.Millisecond), got.refused)
	assert.Equal(t, id, sink.event(eventID)["data"].(map[string]any)["id"])

	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		e := outboxEvents(t, path, "", suffix)[eventID]
		if e.Status == "delivered" || time.Now().After(deadline) {
			assert.Equal(t, "delivered", e.Status, "%+v", e)
			break
		}
	}
	assert.Equal(t, 0, b.stop(exitTimeout))
	assertNoSecrets(t, []*process{a, b}, agentKey, patKey)
}

// eventJSON is a line of "toolgate events list -json".
type eventJSON = server.EventLine
