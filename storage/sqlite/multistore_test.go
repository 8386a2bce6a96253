package sqlite_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/sqlite"
)

// race runs fn(i) for i in [0, n) on n goroutines released together.
func race(n int, fn func(i int)) {
	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// TestTwoStoresOnOneFile: two Stores on the same file, each with its own
// connections and writer, as two gateway processes on one machine would
// have, with racers split between them. The file's write lock keeps one key
// to one execution, one quote to one key, and one budget exact.
func TestTwoStoresOnOneFile(t *testing.T) {
	t.Parallel()
	day := t0.Truncate(24 * time.Hour)
	cases := []struct {
		name    string
		racers  int
		amount  string
		key     func(i int) string // the racer's Idempotency-Key
		shared  bool               // every racer presents the same quote
		limit   *storage.Limit
		winners int
		loser   func(t *testing.T, err error)
		used    string // all-time spend afterwards
	}{
		{
			name: "one key", racers: 100, amount: "0.11", shared: true,
			key:     func(int) string { return "key-1" },
			winners: 1, used: "0.11",
			loser: func(t *testing.T, err error) { assert.ErrorIs(t, err, storage.ErrIdempotencyConflict) },
		},
		{
			name: "one quote", racers: 100, amount: "0.11", shared: true,
			key:     func(i int) string { return fmt.Sprint("key-", i) },
			winners: 1, used: "0.11",
			loser: func(t *testing.T, err error) { assert.ErrorIs(t, err, storage.ErrQuoteUsed) },
		},
		{
			name: "one budget", racers: 200, amount: "0.11",
			key:     func(i int) string { return fmt.Sprint("key-", i) },
			limit:   &storage.Limit{Measure: storage.MeasureSpend, Since: day, Max: dec("5.50")},
			winners: 50, used: "5.50",
			loser: func(t *testing.T, err error) {
				var le *storage.LimitError
				if assert.ErrorAs(t, err, &le) {
					assert.Len(t, le.Failures, 1)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "shared.db")
			stores := []*sqlite.Store{openStore(t, path), openStore(t, path)}
			ctx := t.Context()

			begins := make([]storage.Begin, tc.racers)
			shared := quoteFor("alice", "tool-a", tc.amount, t0)
			for i := range begins {
				q := shared
				if !tc.shared {
					q = quoteFor("alice", "tool-a", tc.amount, t0)
				}
				if i == 0 || !tc.shared {
					require.NoError(t, stores[i%2].CreateQuote(ctx, q))
				}
				var limits []storage.Limit
				if tc.limit != nil {
					limits = append(limits, *tc.limit)
				}
				begins[i] = beginFor(q, tc.key(i), t0, limits...)
			}
			errs := make([]error, tc.racers)
			batches := watchBatches(stores[0], stores[1])
			race(tc.racers, func(i int) {
				_, errs[i] = stores[i%2].BeginExecution(ctx, begins[i])
			})
			if tc.winners > 1 {
				// The racers' admissions shared the writers' transactions
				// (a refused one rolled back alone), and the limit held
				// across them as across the two Stores' writers.
				assert.Greater(t, batches.n.Load(), int64(1), "some admissions shared a transaction")
			}

			winners := 0
			for _, err := range errs {
				if err == nil {
					winners++
					continue
				}
				tc.loser(t, err)
			}
			assert.Equal(t, tc.winners, winners)
			for _, s := range stores {
				got, err := s.MeasureLimits(ctx, "alice", []storage.Limit{
					{Measure: storage.MeasureSpend}, {Measure: storage.MeasureCalls},
				})
				require.NoError(t, err)
				assert.Truef(t, dec(tc.used).Equal(got[0]), "spend seen by each store: %s", got[0])
				assert.EqualValues(t, tc.winners, got[1].IntPart(), "calls seen by each store")
			}
		})
	}
}

// TestTwoStoresFinishAndTakeOver: a run admitted through one Store and
// finished late through it races a takeover through the other; exactly one
// result lands and the call is charged and counted once.
func TestTwoStoresFinishAndTakeOver(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	a, b := openStore(t, path), openStore(t, path)
	ctx := t.Context()
	const rounds = 30
	firsts := make([]storage.Begin, rounds)
	retries := make([]storage.Begin, rounds)
	for r := range rounds {
		q := quoteFor("alice", "tool-a", "0.11", t0)
		require.NoError(t, a.CreateQuote(ctx, q))
		firsts[r] = beginFor(q, fmt.Sprint("key-", r), t0)
		_, err := a.BeginExecution(ctx, firsts[r])
		require.NoError(t, err)
		retries[r] = beginFor(q, firsts[r].Key, firsts[r].LeaseUntil.Add(time.Second))
	}
	oldErrs := make([]error, rounds)
	newErrs := make([]error, rounds)
	race(2*rounds, func(i int) {
		r := i / 2
		if i%2 == 0 {
			oldErrs[r] = a.FinishExecution(ctx, finishFor(firsts[r], storage.ExecutionCompleted, "old", retries[r].Now))
			return
		}
		if _, newErrs[r] = b.BeginExecution(ctx, retries[r]); newErrs[r] != nil {
			return
		}
		f := finishFor(firsts[r], storage.ExecutionCompleted, "new", retries[r].Now)
		f.LeaseToken = retries[r].LeaseToken
		newErrs[r] = b.FinishExecution(ctx, f)
	})
	for r := range rounds {
		oldWon := oldErrs[r] == nil
		newWon := newErrs[r] == nil
		assert.True(t, oldWon != newWon, "round %d: exactly one run lands (old %v, new %v)", r, oldErrs[r], newErrs[r])
		if !oldWon {
			assert.True(t, errors.Is(oldErrs[r], storage.ErrLeaseLost), "round %d: %v", r, oldErrs[r])
		}
	}
	got, err := b.MeasureLimits(ctx, "alice", []storage.Limit{{Measure: storage.MeasureSpend}})
	require.NoError(t, err)
	assert.Truef(t, dec("3.30").Equal(got[0]), "charged once each: %s", got[0])
	u, err := a.Usage(ctx, "tool-a")
	require.NoError(t, err)
	assert.Equal(t, storage.Usage{Count: rounds, UniqueUsers: 1}, u)
}

// TestTwoStoresAddAnEventOnce: gateways on one file write the same events
// at once through two Stores (each cause seen by both); each id is written
// by exactly one of them, so one event of it is delivered.
func TestTwoStoresAddAnEventOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	stores := []*sqlite.Store{openStore(t, path), openStore(t, path)}
	ctx := t.Context()
	const racers, events = 120, 6
	wins := make([]int, racers)
	errs := make([]error, racers)
	race(racers, func(i int) {
		id := fmt.Sprintf("budget.limit_reached:team:daily:2030-03-%02d", 10+i%events)
		ok, err := stores[i%2].AddEvent(ctx, storage.NewEvent{ID: id, Type: "budget.limit_reached",
			Payload: []byte(fmt.Sprintf(`{"racer":%d}`, i)), CreatedAt: t0})
		errs[i] = err
		if ok {
			wins[i] = 1
		}
	})
	perEvent := make([]int, events)
	for i := range racers {
		require.NoError(t, errs[i])
		perEvent[i%events] += wins[i]
	}
	for e, n := range perEvent {
		assert.Equal(t, 1, n, "writes of event %d that reported it new", e)
	}
	for _, s := range stores {
		got, err := s.ListEvents(ctx, storage.EventFilter{Limit: 100})
		require.NoError(t, err)
		assert.Len(t, got, events, "each store lists the one row of each id")
	}
}

// TestTwoStoresNeverHoldOneEvent: deliverers in two processes on one file
// claim the due events at once, through two Stores, as many claims as
// there are events for; each event is leased to exactly one of them, so
// every claim comes back full and each store's deliverers get their share.
func TestTwoStoresNeverHoldOneEvent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	stores := []*sqlite.Store{openStore(t, path), openStore(t, path)}
	ctx := t.Context()
	const deliverers, rounds, limit = 16, 5, 4
	const events = deliverers * rounds * limit
	for i := range events {
		_, err := stores[i%2].AddEvent(ctx, storage.NewEvent{ID: fmt.Sprintf("ev-%03d", i), Type: "approval_request.created",
			Payload: []byte(`{"data":{}}`), CreatedAt: t0.Add(time.Duration(i) * time.Millisecond)})
		require.NoError(t, err)
	}
	claimed := make([][]storage.Event, deliverers)
	errs := make([]error, deliverers)
	race(deliverers, func(i int) {
		for range rounds {
			got, err := stores[i%2].ClaimEvents(ctx, storage.ClaimEvents{Now: t0.Add(time.Second), Lease: time.Minute, Limit: limit})
			if err != nil {
				errs[i] = err
				return
			}
			claimed[i] = append(claimed[i], got...)
		}
	})
	held := map[string]int{}
	byStore := [2]int{}
	for i, got := range claimed {
		require.NoError(t, errs[i])
		byStore[i%2] += len(got)
		for _, e := range got {
			held[e.ID]++
			assert.Equal(t, 1, e.Attempts, "event %s", e.ID)
		}
	}
	for id, n := range held {
		assert.Equal(t, 1, n, "claims of event %s while its lease ran", id)
	}
	assert.Len(t, held, events, "every due event is claimed")
	assert.Equal(t, [2]int{events / 2, events / 2}, byStore, "every claim of either store came back full")
	more, err := stores[0].ClaimEvents(ctx, storage.ClaimEvents{Now: t0.Add(59 * time.Second), Lease: time.Minute, Limit: events})
	require.NoError(t, err)
	assert.Empty(t, more, "every lease still runs")

	// Each lease holds for its deliverer alone, whichever store answers.
	e := claimed[0][0]
	err = stores[1].EventAttempted(ctx, storage.EventAttempt{ID: e.ID, LeaseToken: claimed[1][0].LeaseToken,
		Now: t0.Add(2 * time.Second), Status: storage.EventDelivered})
	require.ErrorIs(t, err, storage.ErrLeaseLost, "another event's lease")
	require.NoError(t, stores[1].EventAttempted(ctx, storage.EventAttempt{ID: e.ID, LeaseToken: e.LeaseToken,
		Now: t0.Add(2 * time.Second), Status: storage.EventDelivered}))
	stats, err := stores[0].EventStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"approval_request.created": 1}, stats.Delivered)
	assert.Equal(t, int64(events-1), stats.Pending)
}

// TestTwoStoresWriteAnAlertOnce: the members of a team finish charged
// calls at once through two Stores on one file, each finish carrying the
// team's alerts. Each alert whose threshold the team's spend reaches is
// written once, by the finish whose charge reached it: the finishes take
// turns on the file, so its used amount is the threshold, exactly.
func TestTwoStoresWriteAnAlertOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	stores := []*sqlite.Store{openStore(t, path), openStore(t, path)}
	ctx := t.Context()
	day := t0.Format("2006-01-02")
	alert := func(threshold string) storage.BudgetAlert {
		return storage.BudgetAlert{Budget: "team", FromDay: day, UntilDay: t0.AddDate(0, 0, 1).Format("2006-01-02"), Threshold: dec(threshold),
			Event: storage.NewEvent{ID: "budget.threshold:team:daily:" + threshold + ":" + day, Type: "budget.threshold", CreatedAt: t0,
				Payload: []byte(`{"type":"budget.threshold","data":{"budget":{"id":"team"},"usedUsd":""}}`)}}
	}
	alerts := []storage.BudgetAlert{alert("0.5"), alert("0.8"), alert("1.0"), alert("100")}
	const racers = 40 // 0.10 each: 4.00 charged in all
	finishes := make([]storage.Finish, racers)
	for i := range finishes {
		q := quoteFor(fmt.Sprint("member-", i%3), "tool-a", "0.10", t0)
		require.NoError(t, stores[i%2].CreateQuote(ctx, q))
		b := inBudgets(beginFor(q, fmt.Sprint("key-", i), t0), day, "team")
		_, err := stores[i%2].BeginExecution(ctx, b)
		require.NoError(t, err)
		finishes[i] = finishFor(b, storage.ExecutionCompleted, "{}", t0.Add(time.Second))
		finishes[i].Alerts = alerts
	}
	errs := make([]error, racers)
	race(racers, func(i int) {
		errs[i] = stores[i%2].FinishExecution(ctx, finishes[i])
	})
	for i, err := range errs {
		require.NoError(t, err, "finish %d", i)
	}
	got, err := stores[0].ListEvents(ctx, storage.EventFilter{Limit: 100})
	require.NoError(t, err)
	used := map[string]string{}
	for _, e := range got {
		var body struct {
			Data struct {
				UsedUSD string `json:"usedUsd"`
			} `json:"data"`
		}
		require.NoError(t, json.Unmarshal(e.Payload, &body))
		used[e.ID] = body.Data.UsedUSD
	}
	assert.Equal(t, map[string]string{
		alerts[0].Event.ID: "0.5000",
		alerts[1].Event.ID: "0.8000",
		alerts[2].Event.ID: "1.0000",
	}, used, "each threshold reached written once, by the charge that reached it; 100 never reached")
}
