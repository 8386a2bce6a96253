package storagetest

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// newEvent is an event of type typ and id id caused at at.
func newEvent(typ, id string, at time.Time) storage.NewEvent {
	return storage.NewEvent{ID: id, Type: typ, CreatedAt: at,
		Payload: []byte(fmt.Sprintf(`{"type":%q,"timestamp":%q,"data":{"id":%q}}`, typ, at.Format(time.RFC3339), id))}
}

// add writes e with AddEvent and requires it new.
func (h *harness) add(e storage.NewEvent) {
	h.t.Helper()
	ok, err := h.s.AddEvent(h.ctx, e)
	require.NoError(h.t, err)
	require.True(h.t, ok, "event %s is new", e.ID)
}

// events lists every event, newest first.
func (h *harness) events(status storage.EventStatus) []storage.Event {
	h.t.Helper()
	got, err := h.s.ListEvents(h.ctx, storage.EventFilter{Status: status, Limit: anyPage})
	require.NoError(h.t, err)
	return got
}

// eventIDs are the ids of the events listed with status, sorted.
func (h *harness) eventIDs(status storage.EventStatus) []string {
	h.t.Helper()
	ids := []string{}
	for _, e := range h.events(status) {
		ids = append(ids, e.ID)
	}
	sort.Strings(ids)
	return ids
}

// claim claims up to limit events at at, under a minute's lease.
func (h *harness) claim(at time.Time, limit int) []storage.Event {
	h.t.Helper()
	got, err := h.s.ClaimEvents(h.ctx, storage.ClaimEvents{Now: at, Lease: time.Minute, Limit: limit})
	require.NoError(h.t, err)
	return got
}

// alertFor is a BudgetAlert of budget's daily window of today at
// threshold, with an event id naming the threshold.
func alertFor(budget, threshold string) storage.BudgetAlert {
	id := "budget.threshold:" + budget + ":daily:" + threshold + ":" + today
	payload := fmt.Sprintf(`{"type":"budget.threshold","timestamp":"2030-03-15T12:00:01Z","data":{"budget":{"id":%q,"name":"Team"},"window":"daily","usedUsd":"","limitUsd":"1.0000"}}`, budget)
	return storage.BudgetAlert{
		Budget: budget, FromDay: today, UntilDay: "2030-03-16", Threshold: dec(threshold),
		Event: storage.NewEvent{ID: id, Type: "budget.threshold", Payload: []byte(payload), CreatedAt: t0.Add(time.Second)},
	}
}

// usedIn reads data.usedUsd of an event's payload.
func usedIn(t *testing.T, payload []byte) string {
	t.Helper()
	var body struct {
		Data struct {
			UsedUSD string `json:"usedUsd"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(payload, &body), "%s", payload)
	return body.Data.UsedUSD
}

// outboxMaxWait is the longest wait between two attempts of an event, as
// package outbox's deliverer schedules them.
const outboxMaxWait = 5 * time.Minute

func testOutbox(t *testing.T, newStore newStoreFunc) {
	t.Run("AddedOnceByID", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		e := newEvent("budget.limit_reached", "budget.limit_reached:team:daily:"+today, t0)
		h.add(e)
		again := e
		again.Payload = []byte(`{"type":"budget.limit_reached","data":{"other":true}}`)
		ok, err := h.s.AddEvent(h.ctx, again)
		require.NoError(t, err)
		assert.False(t, ok, "an id written before is kept as it is")
		got := h.events("")
		require.Len(t, got, 1)
		assert.JSONEq(t, string(e.Payload), string(got[0].Payload))
		assert.Equal(t, storage.EventPending, got[0].Status)
		assertTime(t, t0, got[0].CreatedAt)
		assertTime(t, t0, got[0].NextAttemptAt, "due at once")
		assertTime(t, t0, got[0].RetryingSince)
	})

	t.Run("ApprovalDecidedWithItsEventOrNeither", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		r := newApprovalRequest(q, `{"n":1}`)
		created := newEvent("approval_request.created", "approval_request.created:"+r.ID.String(), t0)
		r.Event = &created
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, r))

		// Asked again: the same request comes back, and no second event.
		again := newApprovalRequest(q, `{"n":1}`)
		dup := newEvent("approval_request.created", "approval_request.created:"+again.ID.String(), t0)
		again.Event = &dup
		var same *storage.PendingRequestError
		require.ErrorAs(t, h.s.CreateApprovalRequest(h.ctx, again), &same)

		// A request refused (its quote used up) writes no event either.
		other := h.quote("alice", "tool-a", "0.11", t0)
		h.begin(beginFor(other, "k-used", t0))
		refused := newApprovalRequest(other, `{"n":2}`)
		lost := newEvent("approval_request.created", "approval_request.created:"+refused.ID.String(), t0)
		refused.Event = &lost
		require.ErrorIs(t, h.s.CreateApprovalRequest(h.ctx, refused), storage.ErrQuoteUsed)

		decided := newEvent("approval_request.decided", "approval_request.decided:"+r.ID.String(), t0.Add(time.Second))
		_, err := h.s.DecideApprovalRequest(h.ctx, storage.ApprovalDecision{ID: r.ID, Approve: true, DecidedBy: "pat", Now: t0.Add(time.Second), Event: &decided})
		require.NoError(t, err)
		late := newEvent("approval_request.decided", "approval_request.decided:"+r.ID.String()+":again", t0.Add(2*time.Second))
		_, err = h.s.DecideApprovalRequest(h.ctx, storage.ApprovalDecision{ID: r.ID, Approve: false, DecidedBy: "kim", Now: t0.Add(2 * time.Second), Event: &late})
		require.ErrorIs(t, err, storage.ErrAlreadyDecided)

		// One that expired stays pending, its event unwritten.
		_, expiring := h.request("alice", "tool-b", t0)
		gone := newEvent("approval_request.decided", "approval_request.decided:"+expiring.ID.String(), expiring.ExpiresAt)
		_, err = h.s.DecideApprovalRequest(h.ctx, storage.ApprovalDecision{ID: expiring.ID, Approve: true, DecidedBy: "pat", Now: expiring.ExpiresAt, Event: &gone})
		require.ErrorIs(t, err, storage.ErrApprovalExpired)

		assert.Equal(t, []string{created.ID, decided.ID}, h.eventIDs(""))
		assert.Nil(t, h.stored(r.ID).Event, "the event is not kept on the request")
	})

	t.Run("ChargeAndItsThresholdEventOrNeither", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		days := utcDays(t0, "team")
		h.callIn("alice", "tool-a", "0.40", "k1", storage.ExecutionCompleted, t0, days)

		// 0.40 + 0.45 = 0.85: the 0.5 and 0.8 thresholds are reached, 1.0 not.
		b := h.admitIn("bob", "tool-a", "0.45", "k2", t0, days)
		f := finishFor(b, storage.ExecutionCompleted, `{"status":"completed"}`, t0.Add(time.Second))
		f.Alerts = []storage.BudgetAlert{alertFor("team", "0.5"), alertFor("team", "0.8"), alertFor("team", "1.0")}

		// A finish whose lease was lost writes neither its charge nor its alerts.
		stale := f
		stale.LeaseToken = uuid.New()
		require.ErrorIs(t, h.s.FinishExecution(h.ctx, stale), storage.ErrLeaseLost)
		assert.Empty(t, h.events(""), "no event without its charge")
		h.assertBudgetUsed("0.85", budgetSpend("team", "", today, "100"), "the call is still held, not charged")

		require.NoError(t, h.s.FinishExecution(h.ctx, f))
		got := h.events("")
		require.Len(t, got, 2)
		sort.Slice(got, func(i, j int) bool { return got[i].ID < got[j].ID })
		assert.Equal(t, []string{f.Alerts[0].Event.ID, f.Alerts[1].Event.ID}, []string{got[0].ID, got[1].ID})
		for _, e := range got {
			assert.Equal(t, "0.8500", usedIn(t, e.Payload), "the window's charged spend, this call included")
			assert.Equal(t, "budget.threshold", e.Type)
		}

		// The next charge reaches 1.0; the ones written are not written again.
		b3 := h.admitIn("alice", "tool-a", "0.15", "k3", t0, days)
		f3 := finishFor(b3, storage.ExecutionCompleted, `{"status":"completed"}`, t0.Add(2*time.Second))
		f3.Alerts = f.Alerts
		require.NoError(t, h.s.FinishExecution(h.ctx, f3))
		assert.Len(t, h.events(""), 3)
		for _, e := range h.events("") {
			if e.ID == f.Alerts[2].Event.ID {
				assert.Equal(t, "1.0000", usedIn(t, e.Payload))
			} else {
				assert.Equal(t, "0.8500", usedIn(t, e.Payload), "kept as first written")
			}
		}

		// A failed call is not charged, and so reaches nothing.
		b4 := h.admitIn("alice", "tool-a", "5.00", "k4", t0, utcDays(t0, "other"))
		f4 := finishFor(b4, storage.ExecutionFailed, `{"status":"failed"}`, t0.Add(3*time.Second))
		f4.Alerts = []storage.BudgetAlert{alertFor("other", "0.5")}
		require.NoError(t, h.s.FinishExecution(h.ctx, f4))
		assert.Len(t, h.events(""), 3)
	})

	t.Run("AmbiguousFinishWritesItsEvent", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.admit("alice", "tool-a", "0.11", "k1", t0)
		f := finishFor(b, storage.ExecutionAmbiguous, `{"status":"ambiguous"}`, t0.Add(time.Second))
		ev := newEvent("execution.ambiguous", "execution.ambiguous:"+b.ExecutionID.String(), t0.Add(time.Second))
		f.Events = []storage.NewEvent{ev}
		stale := f
		stale.LeaseToken = uuid.New()
		require.ErrorIs(t, h.s.FinishExecution(h.ctx, stale), storage.ErrLeaseLost)
		assert.Empty(t, h.events(""))
		require.NoError(t, h.s.FinishExecution(h.ctx, f))
		assert.Equal(t, []string{ev.ID}, h.eventIDs(storage.EventPending))
	})

	t.Run("ResolvedChargeWritesItsAlerts", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.admitIn("alice", "tool-a", "0.60", "k1", t0, utcDays(t0, "team"))
		h.finish(b, storage.ExecutionAmbiguous, `{"status":"ambiguous"}`, t0.Add(time.Second))
		_, err := h.s.ResolveExecution(h.ctx, storage.Resolve{ExecutionID: b.ExecutionID, Outcome: storage.ExecutionCompleted,
			ResolvedBy: "pat", Response: []byte(`{"status":"completed"}`), Now: t0.Add(time.Minute),
			Alerts: []storage.BudgetAlert{alertFor("team", "0.5"), alertFor("team", "0.8")}})
		require.NoError(t, err)
		got := h.events("")
		require.Len(t, got, 1)
		assert.Equal(t, alertFor("team", "0.5").Event.ID, got[0].ID)
		assert.Equal(t, "0.6000", usedIn(t, got[0].Payload))
	})

	t.Run("TwoDeliverersNeverHoldOneEvent", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		const n = 40
		for i := range n {
			h.add(newEvent("approval_request.created", fmt.Sprintf("ev-%02d", i), t0.Add(time.Duration(i)*time.Millisecond)))
		}
		var mu sync.Mutex
		held := map[string]int{}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 4 {
					got, err := h.s.ClaimEvents(h.ctx, storage.ClaimEvents{Now: t0.Add(time.Second), Lease: time.Minute, Limit: 3})
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					for _, e := range got {
						held[e.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		assert.Len(t, held, n, "8 x 4 claims of 3 cover the 40 events")
		for id, times := range held {
			assert.Equal(t, 1, times, "event %s claimed while leased", id)
		}
		assert.Empty(t, h.claim(t0.Add(59*time.Second), n), "every lease still runs")
	})

	t.Run("LapsedLeaseIsTakenOver", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.add(newEvent("execution.ambiguous", "ev-1", t0))
		first := h.claim(t0, 10)
		require.Len(t, first, 1)
		assert.Equal(t, 1, first[0].Attempts)
		assert.NotEqual(t, uuid.Nil, first[0].LeaseToken)
		assertTime(t, t0.Add(time.Minute), first[0].LeaseUntil)
		assert.Empty(t, h.claim(t0.Add(30*time.Second), 10), "leased")

		second := h.claim(t0.Add(time.Minute), 10)
		require.Len(t, second, 1, "the lease lapsed: taken over")
		assert.Equal(t, 2, second[0].Attempts)
		assert.NotEqual(t, first[0].LeaseToken, second[0].LeaseToken)

		err := h.s.EventAttempted(h.ctx, storage.EventAttempt{ID: "ev-1", LeaseToken: first[0].LeaseToken, Now: t0.Add(61 * time.Second), Status: storage.EventDelivered})
		require.ErrorIs(t, err, storage.ErrLeaseLost, "the first deliverer's answer comes too late")
		require.NoError(t, h.s.EventAttempted(h.ctx, storage.EventAttempt{ID: "ev-1", LeaseToken: second[0].LeaseToken, Now: t0.Add(62 * time.Second), Status: storage.EventDelivered}))
		got := h.events("")
		require.Len(t, got, 1)
		assert.Equal(t, storage.EventDelivered, got[0].Status)
		assertTime(t, t0.Add(62*time.Second), got[0].FinishedAt)
		err = h.s.EventAttempted(h.ctx, storage.EventAttempt{ID: "ev-1", LeaseToken: second[0].LeaseToken, Now: t0.Add(63 * time.Second), Status: storage.EventDelivered})
		require.ErrorIs(t, err, storage.ErrLeaseLost, "delivered holds no lease")
		err = h.s.EventAttempted(h.ctx, storage.EventAttempt{ID: "nope", LeaseToken: uuid.New(), Now: t0, Status: storage.EventDelivered})
		require.ErrorIs(t, err, storage.ErrNotFound)
		assert.Empty(t, h.claim(t0.Add(time.Hour), 10), "delivered is never claimed")
	})

	t.Run("RetriesFollowTheScheduleThenFail", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.add(newEvent("approval_request.created", "ev-1", t0))
		// A deliverer's schedule (package outbox's, without its jitter):
		// waits of 2 s doubling to 5 minutes, for a retry period of 24
		// hours from the event's creation, the last attempt at its end.
		end := t0.Add(24 * time.Hour)
		now, attempts := t0, 0
		var waits []time.Duration
		for range 400 {
			got := h.claim(now, 1)
			require.Len(t, got, 1, "due at %s", now)
			attempts++
			assert.Equal(t, attempts, got[0].Attempts)
			assertTime(t, t0, got[0].RetryingSince)
			a := storage.EventAttempt{ID: got[0].ID, LeaseToken: got[0].LeaseToken, Now: now, LastError: "503 Service Unavailable"}
			if !now.Before(end) {
				a.Status = storage.EventFailed
				require.NoError(t, h.s.EventAttempted(h.ctx, a))
				break
			}
			wait := outboxMaxWait
			if attempts < 10 {
				wait = min(2*time.Second<<(attempts-1), outboxMaxWait)
			}
			a.Status, a.RetryAt = storage.EventPending, now.Add(wait)
			if a.RetryAt.After(end) {
				a.RetryAt = end
			}
			require.NoError(t, h.s.EventAttempted(h.ctx, a))
			waits = append(waits, a.RetryAt.Sub(now))
			assert.Empty(t, h.claim(a.RetryAt.Add(-time.Millisecond), 1), "not due before its time")
			now = a.RetryAt
		}
		require.GreaterOrEqual(t, len(waits), 10)
		want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, 64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute, 5 * time.Minute}
		assert.Equal(t, want, waits[:10], "doubling from 2 s to at most 5 minutes")
		got := h.events("")[0]
		assert.Equal(t, storage.EventFailed, got.Status, "failed after its retry period")
		assertTime(t, end, got.FinishedAt, "the last attempt at the period's end")
		assert.Equal(t, "503 Service Unavailable", got.LastError)
		assert.Equal(t, attempts, got.Attempts)
		stats, err := h.s.EventStats(h.ctx)
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"approval_request.created": 1}, stats.Failed)
		assert.Zero(t, stats.Pending)
		assert.Empty(t, h.claim(t0.Add(48*time.Hour), 1), "failed is not claimed again")
	})

	t.Run("RetryOfAFailedEvent", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		for _, id := range []string{"ev-1", "ev-2", "ev-3"} {
			h.add(newEvent("budget.threshold", id, t0))
		}
		for _, e := range h.claim(t0, 10) {
			status := storage.EventFailed
			if e.ID == "ev-3" {
				status = storage.EventDelivered
			}
			require.NoError(t, h.s.EventAttempted(h.ctx, storage.EventAttempt{ID: e.ID, LeaseToken: e.LeaseToken, Now: t0.Add(time.Second), Status: status, LastError: "410 Gone"}))
		}
		later := t0.Add(time.Hour)
		n, err := h.s.RetryEvents(h.ctx, storage.RetryEvents{ID: "ev-1", Now: later})
		require.NoError(t, err)
		assert.Equal(t, 1, n)
		n, err = h.s.RetryEvents(h.ctx, storage.RetryEvents{ID: "ev-3", Now: later})
		require.NoError(t, err)
		assert.Zero(t, n, "a delivered event is not sent again")
		_, err = h.s.RetryEvents(h.ctx, storage.RetryEvents{ID: "nope", Now: later})
		require.ErrorIs(t, err, storage.ErrNotFound)
		assert.Equal(t, []string{"ev-1"}, h.eventIDs(storage.EventPending))
		retried := h.claim(later, 10)
		require.Len(t, retried, 1)
		assertTime(t, later, retried[0].RetryingSince, "a new retry period")
		n, err = h.s.RetryEvents(h.ctx, storage.RetryEvents{Now: later})
		require.NoError(t, err)
		assert.Equal(t, 1, n, "every failed one: ev-2")
		assert.Equal(t, []string{"ev-1", "ev-2"}, h.eventIDs(storage.EventPending))
	})

	t.Run("PruneKeepsWhatIsNotDelivered", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		for _, id := range []string{"delivered", "failed", "pending", "leased"} {
			h.add(newEvent("approval_request.decided", id, t0))
		}
		for _, e := range h.claim(t0, 10) {
			switch e.ID {
			case "delivered", "failed":
				status := storage.EventDelivered
				if e.ID == "failed" {
					status = storage.EventFailed
				}
				require.NoError(t, h.s.EventAttempted(h.ctx, storage.EventAttempt{ID: e.ID, LeaseToken: e.LeaseToken, Now: t0, Status: status}))
			case "pending":
				require.NoError(t, h.s.EventAttempted(h.ctx, storage.EventAttempt{ID: e.ID, LeaseToken: e.LeaseToken, Now: t0, Status: storage.EventPending, RetryAt: t0.Add(time.Hour)}))
			}
		}
		far := t0.Add(90 * 24 * time.Hour)
		res, err := h.s.Prune(h.ctx, storage.Prune{EventsBefore: far, IdempotencyBefore: far, QuotesBefore: far, LedgerBefore: far, ApprovalRequestsBefore: far, Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, 1, res.Events)
		assert.Equal(t, []string{"failed", "leased", "pending"}, h.eventIDs(""))
		stats, err := h.s.EventStats(h.ctx)
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"approval_request.decided": 1}, stats.Delivered, "pruning lowers no count")
		assert.Equal(t, int64(2), stats.Pending)
		assertTime(t, t0, stats.OldestPending)
	})

	t.Run("ListingNewestFirstByStatus", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		for i := range 5 {
			h.add(newEvent(string(toolgatetype.ApprovalRequestCreated), fmt.Sprintf("ev-%d", i), t0.Add(time.Duration(i)*time.Second)))
		}
		got, err := h.s.ListEvents(h.ctx, storage.EventFilter{Status: storage.EventPending, Limit: 2})
		require.NoError(t, err)
		require.Len(t, got, 2)
		assert.Equal(t, "ev-4", got[0].ID)
		assert.Equal(t, "ev-3", got[1].ID)
		rest, err := h.s.ListEvents(h.ctx, storage.EventFilter{Limit: 10, Before: &storage.EventCursor{CreatedAt: got[1].CreatedAt, ID: got[1].ID}})
		require.NoError(t, err)
		require.Len(t, rest, 3)
		assert.Equal(t, "ev-2", rest[0].ID)
		assert.Empty(t, h.events(storage.EventDelivered))
		stats, err := h.s.EventStats(h.ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(5), stats.Pending)
		assertTime(t, t0, stats.OldestPending)
	})
}
