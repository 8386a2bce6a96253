package toolgate_test

import (
	"cmp"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/testproc"
	"github.com/toolgate/toolgate/outbox"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/webhook"
)

// hookSecret signs the budget tests' webhooks.
const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// thresholdHook is what a webhook receiver got: the delivery's id and its
// body, each delivery's signature checked.
type thresholdHook struct {
	ID   string
	Type toolgatetype.ApprovalEventType
	Data toolgatetype.BudgetThreshold
}

// hookReceiver is a webhook endpoint over real HTTP that keeps every
// budget.threshold delivery whose Standard Webhooks signature verifies,
// and counts the deliveries that do not verify.
type hookReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	got      []thresholdHook
	limits   []string // the ids of budget.limit_reached deliveries
	unsigned int
}

// limitIDs are the ids of the budget.limit_reached deliveries so far.
func (r *hookReceiver) limitIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.limits...)
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	key, err := webhook.ParseSecret(hookSecret)
	require.NoError(t, err)
	r := &hookReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get("webhook-id")
		secs, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
		var kind struct {
			Type toolgatetype.ApprovalEventType `json:"type"`
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if !webhook.Verify(key, id, time.Unix(secs, 0), body, req.Header.Get("webhook-signature")) || json.Unmarshal(body, &kind) != nil {
			r.unsigned++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch kind.Type {
		case toolgatetype.BudgetLimitReachedEvent:
			r.limits = append(r.limits, id)
			return
		case toolgatetype.BudgetThresholdCrossed:
		default:
			return // another event: an ambiguous call's, say
		}
		var h thresholdHook
		if json.Unmarshal(body, &h) != nil {
			r.unsigned++
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.ID = id
		r.got = append(r.got, h)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// sender is a new webhook.Sender to the receiver, as each instance of a
// fleet has its own; closed when the test ends.
func (r *hookReceiver) sender(t *testing.T) *webhook.Sender {
	t.Helper()
	s, err := webhook.New(r.srv.URL, hookSecret, nil)
	require.NoError(t, err)
	return s
}

// await waits until n deliveries have arrived and returns them all; the
// deadline only keeps a broken gateway from hanging the test.
func (r *hookReceiver) await(t *testing.T, n int) []thresholdHook {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		got := append([]thresholdHook(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			require.Len(t, got, n)
			sortHooks(got)
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settled waits until the gateways have delivered every event of their
// store, and returns every delivery the receiver got.
func (r *hookReceiver) settled(t *testing.T, gws ...*toolgate.Gateway) []thresholdHook {
	t.Helper()
	for _, gw := range gws {
		gw.WaitBudgetAlerts()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	assert.Zero(t, r.unsigned, "every delivery is signed")
	got := append([]thresholdHook(nil), r.got...)
	sortHooks(got)
	return got
}

// sortHooks orders crossings by period, then fraction: events are sent in
// parallel, and arrive in any order.
func sortHooks(hs []thresholdHook) {
	slices.SortStableFunc(hs, func(a, b thresholdHook) int {
		return cmp.Or(a.Data.PeriodStart.Compare(b.Data.PeriodStart), cmp.Compare(a.Data.Fraction, b.Data.Fraction))
	})
}

// berlin is the search team's time zone: its days start at 23:00 UTC in
// winter, so a window counted in UTC would show.
var berlin = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	return loc
}()

// searchTeam is a budget of alice and bob with alerts at half, 80 % and
// all of a $10 day.
func searchTeam() toolgatetype.BudgetDefinition {
	return toolgatetype.BudgetDefinition{
		ID: "search-team", Name: "Search team", Members: []string{"alice", "bob"},
		DailyLimitUSD: dec("10.0000"), Alerts: []float64{0.5, 0.8, 1.0}, TimeZone: "Europe/Berlin",
	}
}

// pricedAt is a tool callable under the caller's policy at price, with no
// fee on top (the budgets' tests set the fee to 0), so each call charges
// exactly price.
func pricedAt(price string) toolSpec {
	s := paidCallable
	s.price = price
	return s
}

// withBudgets configures budgets, the events' sender and no fee.
func withBudgets(n outbox.Sender, defs ...toolgatetype.BudgetDefinition) envOption {
	return func(c *toolgate.Config) {
		c.Budgets = defs
		c.Events = n
		c.EventDelivery = &outbox.Config{Poll: 10 * time.Millisecond}
		c.FeeRate = dec("0")
	}
}

// charge makes one completed call of the paid tool as principal, costing
// usd.
func (e *env) charge(principal, usd string) {
	e.t.Helper()
	res, err := e.tg.CallApproved(e.t, principal, "paid", `{"v":"x"}`)
	toolgatetest.RequireCompleted(e.t, res, err, usd)
}

// threshold is the data of the search team's daily crossing of fraction
// on day (in Berlin), with used charged.
func threshold(fraction float64, used string, day time.Time) toolgatetype.BudgetThreshold {
	start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, berlin)
	return toolgatetype.BudgetThreshold{
		Budget: toolgatetype.BudgetRef{ID: "search-team", Name: "Search team"}, Window: toolgatetype.BudgetDaily,
		Fraction: fraction, UsedUSD: used, LimitUSD: "10.0000",
		PeriodStart: start.UTC(), ResetsAt: start.AddDate(0, 0, 1).UTC(),
	}
}

func TestBudgetAlertsSendEachFractionOncePerPeriod(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	sender := hooks.sender(t)
	logs := &testproc.SyncBuffer{}
	e := newEnv(t, []toolSpec{pricedAt("2.0000")}, withBudgets(sender, searchTeam()), func(c *toolgate.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	today := t0.In(berlin)

	// $4 of $10: under every fraction.
	e.charge("alice", "2.0000")
	e.charge("bob", "2.0000")
	e.gw.WaitBudgetAlerts()
	// $6 passes half, $8 reaches 80 %, $10 all of it: one event each.
	e.charge("alice", "2.0000")
	e.gw.WaitBudgetAlerts()
	got := hooks.await(t, 1)
	e.charge("bob", "2.0000")
	e.gw.WaitBudgetAlerts()
	got = hooks.await(t, 2)
	e.charge("alice", "2.0000")
	e.gw.WaitBudgetAlerts()
	got = hooks.await(t, 3)
	assert.Equal(t, []thresholdHook{
		{ID: "budget.threshold:search-team:daily:0.5:2026-03-14", Type: toolgatetype.BudgetThresholdCrossed, Data: threshold(0.5, "6.0000", today)},
		{ID: "budget.threshold:search-team:daily:0.8:2026-03-14", Type: toolgatetype.BudgetThresholdCrossed, Data: threshold(0.8, "8.0000", today)},
		{ID: "budget.threshold:search-team:daily:1:2026-03-14", Type: toolgatetype.BudgetThresholdCrossed, Data: threshold(1.0, "10.0000", today)},
	}, got)

	// The next day is the window's next period: the fractions count anew.
	e.clock.Advance(24 * time.Hour)
	for range 3 {
		e.charge("alice", "2.0000")
	}
	e.gw.WaitBudgetAlerts()
	got = hooks.settled(t, e.gw)
	require.Len(t, got, 4, "a fraction passed already sends nothing more in its period")
	assert.Equal(t, thresholdHook{
		ID: "budget.threshold:search-team:daily:0.5:2026-03-15", Type: toolgatetype.BudgetThresholdCrossed,
		Data: threshold(0.5, "6.0000", today.AddDate(0, 0, 1)),
	}, got[3])

	// Each crossing is a WARN line too, naming the budget, not who spent.
	var warned int
	for line := range strings.Lines(logs.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec["msg"] == "budget threshold crossed" {
			warned++
			assert.Equal(t, "WARN", rec["level"])
			assert.Equal(t, "search-team", rec["budget"])
			assert.NotContains(t, line, "alice")
		}
	}
	assert.Equal(t, 4, warned)
}

func TestBudgetAlertsOneChargeSendsEveryFractionItPasses(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	sender := hooks.sender(t)
	team := searchTeam()
	team.MonthlyLimitUSD = dec("100.0000")
	e := newEnv(t, []toolSpec{pricedAt("9.0000")}, withBudgets(sender, team))

	// $9 of the day's $10 passes half and 80 %; it is 9 % of the month's
	// $100, which passes nothing.
	e.charge("alice", "9.0000")
	e.gw.WaitBudgetAlerts()
	got := hooks.settled(t, e.gw)
	today := t0.In(berlin)
	assert.Equal(t, []thresholdHook{
		{ID: "budget.threshold:search-team:daily:0.5:2026-03-14", Type: toolgatetype.BudgetThresholdCrossed, Data: threshold(0.5, "9.0000", today)},
		{ID: "budget.threshold:search-team:daily:0.8:2026-03-14", Type: toolgatetype.BudgetThresholdCrossed, Data: threshold(0.8, "9.0000", today)},
	}, got)
}

func TestBudgetAlertsNotForAFailedCall(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	sender := hooks.sender(t)
	e := newEnv(t, []toolSpec{pricedAt("6.0000")}, withBudgets(sender, searchTeam()))

	// The answer is longer than the tool's output schema allows: the call
	// fails and its $6, which would pass half, is given back.
	res, err := e.tg.CallApproved(t, "alice", "paid", `{"v":"far more than twenty characters"}`)
	toolgatetest.RequireFailed(t, res, err, registry.CodeOutputInvalid)
	e.gw.WaitBudgetAlerts()
	// A completed call after it passes half with its own $6 only.
	e.charge("alice", "6.0000")
	e.gw.WaitBudgetAlerts()
	got := hooks.settled(t, e.gw)
	require.Len(t, got, 1)
	assert.Equal(t, threshold(0.5, "6.0000", t0.In(berlin)), got[0].Data)
}

// A window that refuses calls short of its limit is as full as it gets:
// the organization stopped at $9.60 of $10 hears of it, by the window's
// 100% alert and by budget.limit_reached, each once in the period.
func TestBudgetRefusalShortOfTheLimitSendsTheFullAlertAndLimitReached(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	sender := hooks.sender(t)
	team := searchTeam()
	team.Alerts = []float64{1.0}
	e := newEnv(t, []toolSpec{pricedAt("2.4000")}, withBudgets(sender, team))
	for range 4 {
		e.charge("alice", "2.4000")
	}
	e.gw.WaitBudgetAlerts()
	for range 3 {
		_, err := e.tg.CallApproved(t, "bob", "paid", `{"v":"x"}`)
		toolgatetest.RequireCode(t, err, toolgatetype.CodeSpendLimitExceeded)
	}
	e.gw.WaitBudgetAlerts()
	got := hooks.settled(t, e.gw)
	require.Len(t, got, 1, "the 100% alert, once")
	today := t0.In(berlin)
	want := threshold(1.0, "9.6000", today)
	assert.Equal(t, "budget.threshold:search-team:daily:1:2026-03-14", got[0].ID)
	assert.Equal(t, want, got[0].Data)
	assert.Equal(t, []string{"budget.limit_reached:search-team:daily:2026-03-14"}, hooks.limitIDs(), "once, for three refusals")
}

// An ambiguous call's amount is held, not charged: it sends nothing until
// a person finds it completed, and then its charge does.
func TestBudgetAlertsForAnAmbiguousCallOnceResolvedCompleted(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	sender := hooks.sender(t)
	p := newTicketProvider(t, 1000, false)
	gw := ticketGatewayWith(t, p.srv.URL, false, func(c *toolgate.Config) {
		c.Approvers = toolgatetype.StaticApprovers{Approvers: map[string][]string{"dana": {"alice"}}}
		c.Events = sender
		c.EventDelivery = &outbox.Config{Poll: 10 * time.Millisecond}
		c.Budgets = []toolgatetype.BudgetDefinition{{
			ID: "support", Name: "Support", Members: []string{"alice"},
			DailyLimitUSD: dec("0.2000"), Alerts: []float64{0.25},
		}}
	})

	// Each holds $0.055 of $0.20, past a quarter.
	held := ambiguousCall(t, gw, "held")
	failed := ambiguousCall(t, gw, "lost")
	gw.WaitBudgetAlerts()
	_, err := gw.ResolveExecution(t.Context(), "dana", failed.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed})
	require.NoError(t, err)
	gw.WaitBudgetAlerts()
	hooks.mu.Lock()
	assert.Empty(t, hooks.got, "nothing charged yet")
	hooks.mu.Unlock()

	_, err = gw.ResolveExecution(t.Context(), "dana", held.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusCompleted})
	require.NoError(t, err)
	gw.WaitBudgetAlerts()
	got := hooks.settled(t, gw)
	require.Len(t, got, 1)
	assert.Equal(t, "budget.threshold:support:daily:0.25:2026-03-14", got[0].ID)
	assert.Equal(t, "0.0550", got[0].Data.UsedUSD, "the resolved call's charge, not the released one's")
}
