package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ambiguousBody is the response an ambiguous finish stores in these tests.
const ambiguousBody = `{"status":"ambiguous","output":null}`

// ambiguous admits a call and finishes it ambiguous at at plus a second.
func (h *harness) ambiguous(principal, toolID, total, key string, at time.Time) storage.Begin {
	h.t.Helper()
	b := h.admit(principal, toolID, total, key, at)
	h.finish(b, storage.ExecutionAmbiguous, ambiguousBody, at.Add(time.Second))
	return b
}

// resolveFor is the ResolveExecution input of a person, by, who found
// that execution id ended as outcome.
func resolveFor(id uuid.UUID, outcome storage.ExecutionStatus, by string, at time.Time) storage.Resolve {
	return storage.Resolve{
		ExecutionID: id,
		Outcome:     outcome,
		ResolvedBy:  by,
		Note:        "checked with the provider by " + by,
		Now:         at,
		Response:    []byte(`{"status":"` + string(outcome) + `","resolvedBy":"` + by + `"}`),
	}
}

// resolve resolves and requires success.
func (h *harness) resolve(r storage.Resolve) storage.Execution {
	h.t.Helper()
	e, err := h.s.ResolveExecution(h.ctx, r)
	require.NoError(h.t, err)
	return e
}

// spendOf sums what principal was charged, as the charged totals show it.
func (h *harness) spendOf(principal string) []storage.SpendGroup {
	h.t.Helper()
	got, err := h.s.SpendSummary(h.ctx, storage.SpendQuery{Principals: []string{principal}, GroupBy: toolgatetype.SpendByTool})
	require.NoError(h.t, err)
	return got
}

// usage reads a tool's usage counters.
func (h *harness) usage(toolID string) storage.Usage {
	h.t.Helper()
	u, err := h.s.Usage(h.ctx, toolID)
	require.NoError(h.t, err)
	return u
}

// assertResolution checks that e carries r's resolution.
func assertResolution(t *testing.T, r storage.Resolve, e storage.Execution) {
	t.Helper()
	if !assert.NotNil(t, e.Resolution, "the execution carries its resolution") {
		return
	}
	assert.Equal(t, r.Outcome, e.Resolution.Outcome)
	assert.Equal(t, r.ResolvedBy, e.Resolution.ResolvedBy)
	assertTime(t, r.Now, e.Resolution.ResolvedAt, "ResolvedAt")
	assert.Equal(t, r.Note, e.Resolution.Note)
}

func testAmbiguous(t *testing.T, newStore newStoreFunc) {
	t.Run("FinishKeepsTheReservation", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		day := time.Date(t0.Year(), t0.Month(), t0.Day(), 0, 0, 0, 0, time.UTC)
		month := time.Date(t0.Year(), t0.Month(), 1, 0, 0, 0, 0, time.UTC)
		b := h.ambiguous("alice", "tool-a", "0.11", "key-1", t0)

		e := h.get(b.ExecutionID)
		assert.Equal(t, storage.ExecutionAmbiguous, e.Status)
		assert.False(t, e.Charged)
		assert.Equal(t, []byte(ambiguousBody), e.Response)
		assert.Nil(t, e.Resolution)
		assertTime(t, t0.Add(time.Second), e.FinishedAt, "FinishedAt")

		// Replays return it byte for byte.
		rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		assert.True(t, rec.Finished)
		assert.Equal(t, []byte(ambiguousBody), rec.Response)

		// The amount stays reserved in every window, as a running call's is,
		// and is neither charged nor counted as a use.
		h.assertUsed("alice", "0.11", "1")
		assertDecimal(t, "0.11", h.used("alice", spendLimit("", day, "0")), "daily used")
		assertDecimal(t, "0.11", h.used("alice", spendLimit("", month, "0")), "monthly used")
		assertDecimal(t, "0.11", h.used("alice", spendLimit("tool-a", day, "0")), "the tool's daily used")
		assert.Empty(t, h.spendOf("alice"), "not in the charged totals")
		assert.Equal(t, storage.Usage{}, h.usage("tool-a"))

		// A call the reservation leaves no room for is refused.
		next := beginFor(h.quote("alice", "tool-a", "0.11", t0), "key-2", t0.Add(time.Minute), spendLimit("", day, "0.20"))
		_, err = h.s.BeginExecution(h.ctx, next)
		var le *storage.LimitError
		require.ErrorAs(t, err, &le)
		require.Len(t, le.Failures, 1)
		assertDecimal(t, "0.11", le.Failures[0].Used)
		h.assertKeyFree("alice", "key-2")
		next.Limits = []storage.Limit{spendLimit("", day, "0.22")}
		h.begin(next)
	})

	t.Run("KeyIsNotReusable", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.ambiguous("alice", "tool-a", "0.11", "key-1", t0)
		late := b.LeaseUntil.Add(time.Hour) // no lease is left to take over either
		for name, fp := range map[string]string{"same input": b.Fingerprint, "other input": "fp:other"} {
			again := beginFor(h.quote("alice", "tool-a", "0.11", late), "key-1", late)
			again.Fingerprint = fp
			_, err := h.s.BeginExecution(h.ctx, again)
			assert.ErrorIs(t, err, storage.ErrIdempotencyConflict, name)
		}
		assert.Equal(t, storage.ExecutionAmbiguous, h.get(b.ExecutionID).Status)
		h.assertUsed("alice", "0.11", "1")
	})

	t.Run("FinishAmbiguousChargedIsRefused", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.admit("alice", "tool-a", "0.11", "key-1", t0)
		f := finishFor(b, storage.ExecutionAmbiguous, ambiguousBody, t0)
		f.Charged = true
		err := h.s.FinishExecution(h.ctx, f)
		require.Error(t, err)
		assert.NotErrorIs(t, err, storage.ErrLeaseLost)
		assert.Equal(t, storage.ExecutionRunning, h.get(b.ExecutionID).Status, "nothing was written")
		h.finish(b, storage.ExecutionAmbiguous, ambiguousBody, t0)
	})

	t.Run("ResolveCompletedCharges", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.ambiguous("alice", "tool-a", "0.11", "key-1", t0)
		r := resolveFor(b.ExecutionID, storage.ExecutionCompleted, "approver-1", t0.Add(time.Hour))
		got := h.resolve(r)

		for name, e := range map[string]storage.Execution{"returned": got, "stored": h.get(b.ExecutionID)} {
			t.Run(name, func(t *testing.T) {
				assert.Equal(t, b.ExecutionID, e.ID)
				assert.Equal(t, storage.ExecutionCompleted, e.Status)
				assert.True(t, e.Charged)
				assert.Equal(t, r.Response, e.Response)
				assertDecimal(t, "0.11", e.AmountUSD)
				assertTime(t, t0.Add(time.Second), e.FinishedAt, "FinishedAt stays the run's end")
				assertResolution(t, r, e)
			})
		}
		rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		assert.Equal(t, r.Response, rec.Response, "a replay returns the resolved execution")

		h.assertUsed("alice", "0.11", "1")
		assertGroups(t, []storage.SpendGroup{{Key: "slug-tool-a", TotalUSD: dec("0.11"), Count: 1}}, h.spendOf("alice"))
		assert.Equal(t, storage.Usage{Count: 1, UniqueUsers: 1}, h.usage("tool-a"))
	})

	t.Run("ResolveFailedReleases", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		day := time.Date(t0.Year(), t0.Month(), t0.Day(), 0, 0, 0, 0, time.UTC)
		b := h.ambiguous("alice", "tool-a", "0.11", "key-1", t0)
		next := beginFor(h.quote("alice", "tool-a", "0.11", t0), "key-2", t0.Add(time.Minute), spendLimit("", day, "0.20"))
		_, err := h.s.BeginExecution(h.ctx, next)
		var le *storage.LimitError
		require.ErrorAs(t, err, &le, "the reservation leaves no room")

		r := resolveFor(b.ExecutionID, storage.ExecutionFailed, "approver-1", t0.Add(time.Hour))
		got := h.resolve(r)
		for name, e := range map[string]storage.Execution{"returned": got, "stored": h.get(b.ExecutionID)} {
			t.Run(name, func(t *testing.T) {
				assert.Equal(t, storage.ExecutionFailed, e.Status)
				assert.False(t, e.Charged)
				assert.Equal(t, r.Response, e.Response)
				assertResolution(t, r, e)
			})
		}
		rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		assert.Equal(t, r.Response, rec.Response)

		h.assertUsed("alice", "0", "1")
		assert.Empty(t, h.spendOf("alice"))
		assert.Equal(t, storage.Usage{}, h.usage("tool-a"))
		h.begin(next) // now it fits
	})

	t.Run("SecondResolveIsAlreadyResolved", func(t *testing.T) {
		t.Parallel()
		for _, first := range []storage.ExecutionStatus{storage.ExecutionCompleted, storage.ExecutionFailed} {
			t.Run(string(first), func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				b := h.ambiguous("alice", "tool-a", "0.11", "key-1", t0)
				r := resolveFor(b.ExecutionID, first, "approver-1", t0.Add(time.Hour))
				h.resolve(r)
				spend := map[storage.ExecutionStatus]string{storage.ExecutionCompleted: "0.11", storage.ExecutionFailed: "0"}[first]

				for _, again := range []storage.ExecutionStatus{storage.ExecutionCompleted, storage.ExecutionFailed} {
					_, err := h.s.ResolveExecution(h.ctx, resolveFor(b.ExecutionID, again, "approver-2", t0.Add(2*time.Hour)))
					require.ErrorIs(t, err, storage.ErrAlreadyResolved, "then %s", again)
				}
				e := h.get(b.ExecutionID)
				assert.Equal(t, first, e.Status)
				assert.Equal(t, r.Response, e.Response)
				assertResolution(t, r, e)
				h.assertUsed("alice", spend, "1")
				assert.Equal(t, first == storage.ExecutionCompleted, h.usage("tool-a").Count == 1)
			})
		}
	})

	t.Run("OnlyAmbiguousResolves", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		running := h.admit("alice", "tool-a", "0.11", "running", t0)
		completed := h.call("alice", "tool-a", "0.11", "completed", storage.ExecutionCompleted, t0)
		failed := h.call("alice", "tool-a", "0.11", "failed", storage.ExecutionFailed, t0)
		for name, b := range map[string]storage.Begin{"running": running, "completed": completed, "failed": failed} {
			before := h.get(b.ExecutionID)
			for _, outcome := range []storage.ExecutionStatus{storage.ExecutionCompleted, storage.ExecutionFailed} {
				_, err := h.s.ResolveExecution(h.ctx, resolveFor(b.ExecutionID, outcome, "approver-1", t0.Add(time.Hour)))
				assert.ErrorIs(t, err, storage.ErrNotAmbiguous, "%s resolved %s", name, outcome)
			}
			after := h.get(b.ExecutionID)
			assert.Equal(t, before.Status, after.Status, name)
			assert.Equal(t, before.Response, after.Response, name)
			assert.Nil(t, after.Resolution, name)
		}
		h.assertUsed("alice", "0.22", "3")
		assert.Equal(t, storage.Usage{Count: 1, UniqueUsers: 1}, h.usage("tool-a"))
		h.finish(running, storage.ExecutionCompleted, `{}`, t0) // the run can still report
	})

	t.Run("UnknownIsNotFound", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		_, err := h.s.ResolveExecution(h.ctx, resolveFor(uuid.New(), storage.ExecutionCompleted, "approver-1", t0))
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("OutcomeMustBeCompletedOrFailed", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.ambiguous("alice", "tool-a", "0.11", "key-1", t0)
		for _, outcome := range []storage.ExecutionStatus{storage.ExecutionAmbiguous, storage.ExecutionRunning, ""} {
			_, err := h.s.ResolveExecution(h.ctx, resolveFor(b.ExecutionID, outcome, "approver-1", t0))
			require.Error(t, err, "outcome %q", outcome)
			assert.NotErrorIs(t, err, storage.ErrNotFound)
		}
		e := h.get(b.ExecutionID)
		assert.Equal(t, storage.ExecutionAmbiguous, e.Status)
		assert.Nil(t, e.Resolution)
		h.assertUsed("alice", "0.11", "1")
	})

	t.Run("ListingByStatus", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		completed := h.call("alice", "tool-a", "0.11", "c", storage.ExecutionCompleted, t0)
		first := h.ambiguous("alice", "tool-a", "0.11", "a1", t0.Add(time.Second))
		failed := h.call("alice", "tool-a", "0.11", "f", storage.ExecutionFailed, t0.Add(2*time.Second))
		second := h.ambiguous("alice", "tool-a", "0.11", "a2", t0.Add(3*time.Second))
		h.admit("alice", "tool-a", "0.11", "running", t0.Add(4*time.Second))
		h.ambiguous("bob", "tool-a", "0.11", "b1", t0.Add(5*time.Second))
		query := func(status storage.ExecutionStatus) storage.ExecutionQuery {
			return storage.ExecutionQuery{Principals: []string{"alice"}, Status: status, Limit: 10}
		}

		listed := h.list(query(storage.ExecutionAmbiguous))
		assert.Equal(t, newestFirst(first, second), ids(listed))
		for _, e := range listed {
			assert.Equal(t, storage.ExecutionAmbiguous, e.Status)
			assert.Nil(t, e.Response, "listings leave responses out")
		}

		r := resolveFor(second.ExecutionID, storage.ExecutionFailed, "approver-1", t0.Add(time.Hour))
		h.resolve(r)
		assert.Equal(t, newestFirst(first), ids(h.list(query(storage.ExecutionAmbiguous))), "a resolved execution is no longer ambiguous")
		listed = h.list(query(storage.ExecutionFailed))
		assert.Equal(t, newestFirst(failed, second), ids(listed))
		assertResolution(t, r, listed[0])
		assert.Nil(t, listed[1].Resolution)
		assert.Equal(t, newestFirst(completed, first, failed, second), ids(h.list(query(""))))
	})

	t.Run("PruneKeepsWhatIsUnresolved", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// Last month's calls, pruned as a day of results and a month of
		// ledger are: the ambiguous one stays, record, execution and
		// reservation, until a person resolves it.
		began := t0.AddDate(0, -1, 0)
		monthStart := time.Date(t0.Year(), t0.Month(), 1, 0, 0, 0, 0, time.UTC)
		completed := h.call("alice", "tool-a", "1.00", "c", storage.ExecutionCompleted, began)
		b := h.ambiguous("alice", "tool-a", "0.11", "a", began.Add(time.Second))
		prune := storage.Prune{IdempotencyBefore: t0.Add(-24 * time.Hour), LedgerBefore: monthStart, Limit: pruneAll}

		res, err := h.s.Prune(h.ctx, prune)
		require.NoError(t, err)
		assert.Equal(t, storage.PruneResult{Idempotency: 1, Ledger: 1}, res, "only the completed call goes")
		h.assertKeyFree("alice", completed.Key)
		assert.Equal(t, storage.ExecutionAmbiguous, h.get(b.ExecutionID).Status)
		rec, err := h.s.GetIdempotency(h.ctx, "alice", "a")
		require.NoError(t, err)
		assert.Equal(t, []byte(ambiguousBody), rec.Response)
		h.assertUsed("alice", "0.11", "1")
		assertDecimal(t, "0", h.used("alice", spendLimit("", monthStart, "0")), "it counts in its own month only")

		// Resolved, it can still be charged, then ages like any other.
		h.resolve(resolveFor(b.ExecutionID, storage.ExecutionCompleted, "approver-1", t0))
		h.assertUsed("alice", "0.11", "1")
		res, err = h.s.Prune(h.ctx, prune)
		require.NoError(t, err)
		assert.Equal(t, storage.PruneResult{Idempotency: 1, Ledger: 1}, res)
		h.assertKeyFree("alice", "a")
		h.assertUsed("alice", "0", "0")
	})

	t.Run("ResolutionIsCopied", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.ambiguous("alice", "tool-a", "0.11", "key-1", t0)
		r := resolveFor(b.ExecutionID, storage.ExecutionCompleted, "approver-1", t0)
		got := h.resolve(r)
		got.Resolution.Note = "changed by the caller"
		got.Response[0] = 'X'
		e := h.get(b.ExecutionID)
		e.Resolution.ResolvedBy = "someone else"
		listed := h.list(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: 10})
		require.Len(t, listed, 1)
		listed[0].Resolution.Outcome = storage.ExecutionFailed

		e = h.get(b.ExecutionID)
		assertResolution(t, r, e)
		assert.Equal(t, r.Response, e.Response)
	})

	t.Run("ResolvesRace", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.ambiguous("alice", "tool-a", "0.11", "key-1", t0)
		// Half the racers find that it ran, half that it did not: one
		// resolution wins and the ledger moves once, its way.
		const n = 50
		errs := make([]error, n)
		resolved := make([]storage.Execution, n)
		resolves := make([]storage.Resolve, n)
		for i := range n {
			outcome := storage.ExecutionCompleted
			if i%2 == 1 {
				outcome = storage.ExecutionFailed
			}
			resolves[i] = resolveFor(b.ExecutionID, outcome, fmt.Sprintf("approver-%d", i), t0.Add(time.Hour))
		}
		race(n, func(i int) {
			resolved[i], errs[i] = h.s.ResolveExecution(h.ctx, resolves[i])
		})
		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "racers %d and %d both resolved", winner, i)
				winner = i
				continue
			}
			require.ErrorIs(t, err, storage.ErrAlreadyResolved, "racer %d", i)
		}
		require.NotEqual(t, -1, winner, "one resolution wins")
		w := resolves[winner]
		assertResolution(t, w, resolved[winner])

		e := h.get(b.ExecutionID)
		assert.Equal(t, w.Outcome, e.Status)
		assertResolution(t, w, e)
		rec, err := h.s.GetIdempotency(h.ctx, "alice", "key-1")
		require.NoError(t, err)
		assert.Equal(t, w.Response, rec.Response)
		if w.Outcome == storage.ExecutionCompleted {
			h.assertUsed("alice", "0.11", "1")
			assertGroups(t, []storage.SpendGroup{{Key: "slug-tool-a", TotalUSD: dec("0.11"), Count: 1}}, h.spendOf("alice"))
			assert.Equal(t, storage.Usage{Count: 1, UniqueUsers: 1}, h.usage("tool-a"))
		} else {
			h.assertUsed("alice", "0", "1")
			assert.Empty(t, h.spendOf("alice"))
			assert.Equal(t, storage.Usage{}, h.usage("tool-a"))
		}
	})
}
