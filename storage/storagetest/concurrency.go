package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// race runs fn(i) for i in [0, n) on n goroutines released together, so the
// calls overlap as much as the scheduler allows.
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

func testConcurrency(t *testing.T, newStore newStoreFunc) {
	t.Run("SpendControlUpdatesBothSurvive", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// Each racer sets the limits of its own tool, as two PUTs of
		// /v1/spend-controls/tools/{tool} at once do. Read-modify-write
		// outside the store would keep only some of them.
		const n = 20
		errs := make([]error, n)
		race(n, func(i int) {
			_, errs[i] = h.s.UpdateSpendControls(h.ctx, "alice", func(c *toolgatetype.SpendControls) error {
				if c.Tools == nil {
					c.Tools = map[string]toolgatetype.ToolSpendControls{}
				}
				c.Tools[fmt.Sprintf("tool-%d", i)] = toolgatetype.ToolSpendControls{RateLimitPerMinute: intPtr(i)}
				return nil
			})
		})
		for i, err := range errs {
			require.NoError(t, err, "racer %d", i)
		}
		got, err := h.s.GetSpendControls(h.ctx, "alice")
		require.NoError(t, err)
		require.Len(t, got.Tools, n, "every concurrent update survives")
		for i := range n {
			tc, ok := got.Tools[fmt.Sprintf("tool-%d", i)]
			if assert.True(t, ok, "tool-%d was lost", i) {
				assert.Equal(t, intPtr(i), tc.RateLimitPerMinute)
			}
		}
	})

	t.Run("ApproveRacesDeny", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		_, r := h.request("alice", "tool-a", t0)
		// Half the racers approve, remembering never_ask, half deny: one
		// decision wins, and the standing approval exists exactly when an
		// approve won.
		const n = 100
		errs := make([]error, n)
		decided := make([]storage.ApprovalRequest, n)
		race(n, func(i int) {
			decided[i], errs[i] = h.s.DecideApprovalRequest(h.ctx, storage.ApprovalDecision{
				ID: r.ID, Approve: i%2 == 0, DecidedBy: fmt.Sprintf("approver-%d", i),
				Remember: toolgatetype.ApprovalNeverAsk, Now: t0.Add(time.Second),
			})
		})
		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "racers %d and %d both decided", winner, i)
				winner = i
				continue
			}
			require.ErrorIs(t, err, storage.ErrAlreadyDecided, "racer %d", i)
		}
		require.NotEqual(t, -1, winner, "one decision wins")
		stored := h.stored(r.ID)
		assert.Equal(t, decided[winner].Status, stored.Status)
		assert.Equal(t, fmt.Sprintf("approver-%d", winner), stored.DecidedBy)
		a, err := h.s.GetApproval(h.ctx, "alice", "tool-a")
		if winner%2 == 0 {
			assert.Equal(t, storage.ApprovalApproved, stored.Status)
			require.NoError(t, err)
			assert.Equal(t, stored.DecidedBy, a.ApprovedBy)
		} else {
			assert.Equal(t, storage.ApprovalDenied, stored.Status)
			assert.ErrorIs(t, err, storage.ErrNotFound, "a denial remembers nothing")
		}
	})

	t.Run("CallsRaceOnOneGrant", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b, r := h.granted("alice", "tool-a", "", t0)
		// Each racer is a separate call, under its own key, of the one
		// quote the grant is for.
		const n = 100
		errs := make([]error, n)
		begins := make([]storage.Begin, n)
		race(n, func(i int) {
			begins[i] = b
			begins[i].Key = fmt.Sprintf("key-%d", i)
			begins[i].Fingerprint = "fp:" + begins[i].Key
			begins[i].ExecutionID, begins[i].LeaseToken = uuid.New(), uuid.New()
			_, errs[i] = h.s.BeginExecution(h.ctx, begins[i])
		})
		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "racers %d and %d both proceeded", winner, i)
				winner = i
				continue
			}
			if !errors.Is(err, storage.ErrQuoteUsed) && !errors.Is(err, storage.ErrGrantUnusable) {
				t.Fatalf("racer %d: %v", i, err)
			}
			h.assertKeyFree("alice", begins[i].Key)
		}
		require.NotEqual(t, -1, winner, "one call proceeds")
		used := h.stored(r.ID)
		assert.Equal(t, storage.ApprovalUsed, used.Status)
		assert.Equal(t, begins[winner].ExecutionID, used.ExecutionID)
		h.assertUsed("alice", "0.11", "1")
	})

	t.Run("OneKeyManyRacers", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		const n = 100
		q := h.quote("alice", "tool-a", "0.11", t0)
		errs := make([]error, n)
		results := make([]storage.BeginResult, n)
		race(n, func(i int) {
			// Each racer is a separate request: its own execution id and
			// lease token, the same key, fingerprint and quote.
			results[i], errs[i] = h.s.BeginExecution(h.ctx, beginFor(q, "key-1", t0))
		})

		winners := 0
		for i, err := range errs {
			if err == nil {
				winners++
				assert.False(t, results[i].TookOver)
				continue
			}
			assert.ErrorIs(t, err, storage.ErrIdempotencyConflict, "racer %d", i)
		}
		assert.Equal(t, 1, winners)
		h.assertUsed("alice", "0.11", "1")
	})

	t.Run("OneQuoteManyKeys", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		const n = 100
		q := h.quote("alice", "tool-a", "0.11", t0)
		errs := make([]error, n)
		race(n, func(i int) {
			_, errs[i] = h.s.BeginExecution(h.ctx, beginFor(q, fmt.Sprint("key-", i), t0))
		})

		winners := 0
		for i, err := range errs {
			if err == nil {
				winners++
				continue
			}
			assert.ErrorIs(t, err, storage.ErrQuoteUsed, "racer %d", i)
		}
		assert.Equal(t, 1, winners)
		h.assertUsed("alice", "0.11", "1")
	})

	t.Run("LimitsHoldUnderContention", func(t *testing.T) {
		t.Parallel()
		day := t0.Truncate(24 * time.Hour)
		cases := []struct {
			name     string
			racers   int
			amount   string
			limit    storage.Limit
			winners  int
			wantUsed string
		}{
			{"daily spend", 200, "0.11", spendLimit("", day, "5.50"), 50, "5.50"},
			{"tool daily spend", 200, "0.11", spendLimit("tool-a", day, "1.10"), 10, "1.10"},
			{"calls per minute", 100, "0", callsLimit("", t0.Add(-time.Minute), "10"), 10, "10"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				begins := make([]storage.Begin, tc.racers)
				for i := range begins {
					q := h.quote("alice", "tool-a", tc.amount, t0)
					begins[i] = beginFor(q, fmt.Sprint("key-", i), t0, tc.limit)
				}
				errs := make([]error, tc.racers)
				race(tc.racers, func(i int) {
					_, errs[i] = h.s.BeginExecution(h.ctx, begins[i])
				})

				winners := 0
				for i, err := range errs {
					if err == nil {
						winners++
						continue
					}
					var le *storage.LimitError
					if assert.ErrorAs(t, err, &le, "racer %d", i) && assert.Len(t, le.Failures, 1) {
						assert.Equal(t, 0, le.Failures[0].Index)
					}
				}
				assert.Equal(t, tc.winners, winners)
				assertDecimal(t, tc.wantUsed, h.used("alice", tc.limit), "used after the race")
			})
		}
	})

	t.Run("FinishRacesTakeover", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		const rounds = 50
		// Each round: the original run finishes late, exactly while a retry
		// takes its expired lease and finishes too. Only one of them may
		// land, and the call is charged and counted once.
		firsts := make([]storage.Begin, rounds)
		retries := make([]storage.Begin, rounds)
		for r := range rounds {
			q := h.quote("alice", "tool-a", "0.11", t0)
			firsts[r] = beginFor(q, fmt.Sprint("key-", r), t0)
			h.begin(firsts[r])
			retries[r] = beginFor(q, firsts[r].Key, firsts[r].LeaseUntil.Add(time.Second))
		}
		oldErrs := make([]error, rounds)
		takeErrs := make([]error, rounds)
		newErrs := make([]error, rounds)
		race(2*rounds, func(i int) {
			r := i / 2
			first, retry := firsts[r], retries[r]
			if i%2 == 0 {
				oldErrs[r] = h.s.FinishExecution(h.ctx, finishFor(first, storage.ExecutionCompleted, "old", retry.Now))
				return
			}
			if _, takeErrs[r] = h.s.BeginExecution(h.ctx, retry); takeErrs[r] != nil {
				return
			}
			f := finishFor(first, storage.ExecutionCompleted, "new", retry.Now)
			f.LeaseToken = retry.LeaseToken
			newErrs[r] = h.s.FinishExecution(h.ctx, f)
		})

		for r := range rounds {
			key := firsts[r].Key
			want := "new"
			switch {
			case oldErrs[r] == nil:
				// The original finished first, so the retry found a
				// finished record.
				want = "old"
				assert.ErrorIs(t, takeErrs[r], storage.ErrIdempotencyConflict, key)
			case errors.Is(oldErrs[r], storage.ErrLeaseLost):
				assert.NoError(t, takeErrs[r], key)
				assert.NoError(t, newErrs[r], key)
			default:
				assert.Fail(t, "unexpected error from the original run", "%s: %v", key, oldErrs[r])
			}
			rec, err := h.s.GetIdempotency(h.ctx, "alice", key)
			if assert.NoError(t, err, key) {
				assert.True(t, rec.Finished, key)
				assert.Equal(t, want, string(rec.Response), key)
			}
		}
		h.assertUsed("alice", dec("0.11").Mul(decimal.NewFromInt(rounds)).String(), fmt.Sprint(rounds))
		u, err := h.s.Usage(h.ctx, "tool-a")
		require.NoError(t, err)
		assert.Equal(t, storage.Usage{Count: rounds, UniqueUsers: 1}, u)
	})

	t.Run("MixedTraffic", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// Readers, writers and Prune on every kind of record at once, for
		// the race detector; the totals at the end check nothing was lost.
		// Only assert runs off the test goroutine: require would stop the
		// wrong goroutine.
		const principals, calls = 8, 25
		race(principals*3, func(i int) {
			p := fmt.Sprint("p", i%principals)
			switch i / principals {
			case 0: // callers
				for c := range calls {
					at := t0.Add(time.Duration(c) * time.Second)
					q := newQuote(p, fmt.Sprint("tool-", c%3), "0.01", at)
					b := beginFor(q, fmt.Sprint("k", c), at)
					status := storage.ExecutionCompleted
					if c%5 == 0 {
						status = storage.ExecutionFailed
					}
					assert.NoError(t, h.s.CreateQuote(h.ctx, q))
					_, err := h.s.BeginExecution(h.ctx, b)
					assert.NoError(t, err)
					assert.NoError(t, h.s.FinishExecution(h.ctx, finishFor(b, status, "{}", at)))
					_, err = h.s.GetIdempotency(h.ctx, p, b.Key)
					assert.NoError(t, err)
					_, err = h.s.GetExecution(h.ctx, b.ExecutionID)
					assert.NoError(t, err)
				}
			case 1: // settings
				for c := range calls {
					id := fmt.Sprint("tool-", c%3)
					// One goroutine per principal edits settings, so each
					// step must succeed.
					assert.NoError(t, h.s.PutApproval(h.ctx, approval(p, id, "d", toolgatetype.ApprovalNeverAsk)))
					assert.NoError(t, h.s.PutSpendControls(h.ctx, p, toolgatetype.SpendControls{DailyLimitUSD: decPtr("1")}))
					list, err := h.s.ListApprovals(h.ctx, p)
					assert.NoError(t, err)
					assert.Len(t, list, 1)
					_, err = h.s.GetSpendControls(h.ctx, p)
					assert.NoError(t, err)
					assert.NoError(t, h.s.DeleteApproval(h.ctx, p, id))
				}
			default: // previews and housekeeping
				for range calls {
					_, err := h.s.MeasureLimits(h.ctx, p, []storage.Limit{spendLimit("", t0, "1"), callsLimit("tool-1", t0, "1")})
					assert.NoError(t, err)
					_, err = h.s.UsageAll(h.ctx)
					assert.NoError(t, err)
					_, err = h.s.Prune(h.ctx, storage.Prune{QuotesBefore: t0.Add(-time.Hour), IdempotencyBefore: t0.Add(-time.Hour), Limit: pruneAll})
					assert.NoError(t, err)
				}
			}
		})

		// 20 of each principal's 25 calls complete.
		for p := range principals {
			h.assertUsed(fmt.Sprint("p", p), "0.20", fmt.Sprint(calls))
		}
		all, err := h.s.UsageAll(h.ctx)
		require.NoError(t, err)
		var total int64
		for _, u := range all {
			total += u.Count
			assert.Equal(t, int64(principals), u.UniqueUsers)
		}
		assert.Equal(t, int64(principals*20), total)
	})
}
