package sqlite_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// TestEventInputRefused: an event the outbox could not deliver as given
// (no id, an id or type too long, a payload that is no JSON object, no
// time; an alert whose payload has no data object or whose days are no
// days) is refused, and so is the change that carried it: the request is
// not stored, the decision not taken, the finish and the resolution not
// recorded, nothing charged, and no event written.
func TestEventInputRefused(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	good := storage.NewEvent{ID: "ev", Type: "approval_request.created", Payload: []byte(`{"data":{}}`), CreatedAt: t0}
	with := func(change func(e *storage.NewEvent)) storage.NewEvent {
		e := good
		change(&e)
		return e
	}
	bad := map[string]storage.NewEvent{
		"no id":            with(func(e *storage.NewEvent) { e.ID = "" }),
		"a long id":        with(func(e *storage.NewEvent) { e.ID = strings.Repeat("x", storage.MaxEventIDLength+1) }),
		"no type":          with(func(e *storage.NewEvent) { e.Type = "" }),
		"a long type":      with(func(e *storage.NewEvent) { e.Type = strings.Repeat("x", storage.MaxEventTypeLength+1) }),
		"an array":         with(func(e *storage.NewEvent) { e.Payload = []byte(`[1]`) }),
		"broken JSON":      with(func(e *storage.NewEvent) { e.Payload = []byte(`{"data":`) }),
		"no time":          with(func(e *storage.NewEvent) { e.CreatedAt = time.Time{} }),
		"an empty payload": with(func(e *storage.NewEvent) { e.Payload = nil }),
	}
	for name, e := range bad {
		_, err := s.AddEvent(ctx, e)
		require.Error(t, err, name)
	}
	longest := with(func(e *storage.NewEvent) { e.ID = strings.Repeat("x", storage.MaxEventIDLength) })
	ok, err := s.AddEvent(ctx, longest)
	require.NoError(t, err)
	require.True(t, ok, "an id of the most bytes is kept")
	listed := func() []string {
		t.Helper()
		got, err := s.ListEvents(ctx, storage.EventFilter{Limit: 100})
		require.NoError(t, err)
		ids := []string{}
		for _, e := range got {
			if e.ID != longest.ID {
				ids = append(ids, e.ID)
			}
		}
		return ids
	}

	// A request and its decision.
	q := quoteFor("alice", "tool-a", "0.11", t0)
	require.NoError(t, s.CreateQuote(ctx, q))
	r := storage.ApprovalRequest{ID: uuid.New(), Principal: q.Principal, QuoteID: q.ID, ToolID: q.ToolID, ToolSlug: q.ToolSlug,
		ManifestDigest: q.ManifestDigest, PriceUSD: q.PriceUSD, FeeUSD: q.FeeUSD, TotalUSD: q.TotalUSD, Input: []byte(`{}`),
		InputSHA256: "sha", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	noTime := bad["no time"]
	r.Event = &noTime
	require.Error(t, s.CreateApprovalRequest(ctx, r))
	_, err = s.GetApprovalRequest(ctx, r.ID)
	require.ErrorIs(t, err, storage.ErrNotFound, "the request is not stored without its event")
	r.Event = nil
	require.NoError(t, s.CreateApprovalRequest(ctx, r))
	_, err = s.DecideApprovalRequest(ctx, storage.ApprovalDecision{ID: r.ID, Approve: true, DecidedBy: "pat", Now: t0, Event: &noTime})
	require.Error(t, err)
	got, err := s.GetApprovalRequest(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, storage.ApprovalPending, got.Status, "not decided without its event")

	// A charged finish and its alerts.
	day := t0.Format("2006-01-02")
	alert := storage.BudgetAlert{Budget: "team", FromDay: day, UntilDay: t0.AddDate(0, 0, 1).Format("2006-01-02"), Threshold: dec("0.01"),
		Event: storage.NewEvent{ID: "alert", Type: "budget.threshold", Payload: []byte(`{"data":{}}`), CreatedAt: t0}}
	badAlerts := map[string]storage.BudgetAlert{}
	noData := alert
	noData.Event.Payload = []byte(`{"type":"budget.threshold"}`)
	badAlerts["a payload with no data"] = noData
	noDay := alert
	noDay.FromDay = "15/03/2030"
	badAlerts["a first day that is no day"] = noDay
	noBudget := alert
	noBudget.Budget = ""
	badAlerts["no budget"] = noBudget
	q2 := quoteFor("alice", "tool-a", "0.50", t0)
	require.NoError(t, s.CreateQuote(ctx, q2))
	b := inBudgets(beginFor(q2, "key-finish", t0), day, "team")
	_, err = s.BeginExecution(ctx, b)
	require.NoError(t, err)
	for name, a := range badAlerts {
		f := finishFor(b, storage.ExecutionCompleted, "{}", t0.Add(time.Second))
		f.Alerts = []storage.BudgetAlert{alert, a}
		require.Error(t, s.FinishExecution(ctx, f), name)
	}
	f := finishFor(b, storage.ExecutionAmbiguous, "{}", t0.Add(time.Second))
	f.Events = []storage.NewEvent{good, bad["an array"]}
	require.Error(t, s.FinishExecution(ctx, f))
	spend, err := s.SpendSummary(ctx, storage.SpendQuery{Budget: "team", GroupBy: toolgatetype.SpendByDay})
	require.NoError(t, err)
	assert.Empty(t, spend, "nothing charged")
	assert.Empty(t, listed(), "no event written")

	// The call still runs under its lease: an ambiguous finish lands, and
	// a resolution with an alert it cannot write is refused.
	f.Events = nil
	require.NoError(t, s.FinishExecution(ctx, f))
	_, err = s.ResolveExecution(ctx, storage.Resolve{ExecutionID: b.ExecutionID, Outcome: storage.ExecutionCompleted, ResolvedBy: "pat",
		Response: []byte("{}"), Now: t0.Add(time.Minute), Alerts: []storage.BudgetAlert{noData}})
	require.Error(t, err)
	e, err := s.GetExecution(ctx, b.ExecutionID)
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionAmbiguous, e.Status, "not resolved without its alerts")
	_, err = s.ResolveExecution(ctx, storage.Resolve{ExecutionID: b.ExecutionID, Outcome: storage.ExecutionCompleted, ResolvedBy: "pat",
		Response: []byte("{}"), Now: t0.Add(time.Minute), Alerts: []storage.BudgetAlert{alert}})
	require.NoError(t, err)
	assert.Equal(t, []string{"alert"}, listed(), "the resolution's charge reached the alert")
}

// TestDeliveredEventsPrunedUpToTheLimit: retention deletes delivered
// events at most its limit per Prune, so a backlog
// drains over several runs without a long write; what EventStats counts
// stays.
func TestDeliveredEventsPrunedUpToTheLimit(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const events, limit = 250, 120
	for i := range events {
		_, err := s.AddEvent(ctx, storage.NewEvent{ID: fmt.Sprintf("ev-%03d", i), Type: "budget.threshold",
			Payload: []byte(`{"data":{}}`), CreatedAt: t0.Add(time.Duration(i) * time.Millisecond)})
		require.NoError(t, err)
	}
	claimed, err := s.ClaimEvents(ctx, storage.ClaimEvents{Now: t0.Add(time.Second), Lease: time.Minute, Limit: events})
	require.NoError(t, err)
	require.Len(t, claimed, events)
	for _, e := range claimed {
		require.NoError(t, s.EventAttempted(ctx, storage.EventAttempt{ID: e.ID, LeaseToken: e.LeaseToken,
			Now: t0.Add(2 * time.Second), Status: storage.EventDelivered}))
	}
	before := t0.Add(24 * time.Hour)
	var pruned []int
	for range 3 {
		res, err := s.Prune(ctx, storage.Prune{EventsBefore: before, Limit: limit})
		require.NoError(t, err)
		pruned = append(pruned, res.Events)
	}
	assert.Equal(t, []int{limit, limit, events - 2*limit}, pruned)
	left, err := s.ListEvents(ctx, storage.EventFilter{Limit: events})
	require.NoError(t, err)
	assert.Empty(t, left)
	stats, err := s.EventStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"budget.threshold": events}, stats.Delivered)
}
