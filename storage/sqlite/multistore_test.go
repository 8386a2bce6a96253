package sqlite_test

import (
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

// TestTwoStoresClaimAnAlertOnce: gateways on one file all see a budget
// cross its threshold and claim its alert at once, through two Stores;
// each alert is claimed by exactly one of them, so one webhook goes out.
func TestTwoStoresClaimAnAlertOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	stores := []*sqlite.Store{openStore(t, path), openStore(t, path)}
	ctx := t.Context()
	const racers, alerts = 120, 6
	wins := make([]int, racers)
	errs := make([]error, racers)
	race(racers, func(i int) {
		id := fmt.Sprintf("budget.threshold/team/daily/0.%d/2030-03-15", i%alerts)
		ok, err := stores[i%2].ClaimAlert(ctx, id, t0)
		errs[i] = err
		if ok {
			wins[i] = 1
		}
	})
	perAlert := make([]int, alerts)
	for i := range racers {
		require.NoError(t, errs[i])
		perAlert[i%alerts] += wins[i]
	}
	for a, n := range perAlert {
		assert.Equal(t, 1, n, "claims of alert %d that won", a)
	}
}
