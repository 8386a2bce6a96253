package storagetest

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// list lists with q and requires success.
func (h *harness) list(q storage.ExecutionQuery) []storage.Execution {
	h.t.Helper()
	got, err := h.s.ListExecutions(h.ctx, q)
	require.NoError(h.t, err)
	return got
}

// ids are the executions' ids in the order given.
func ids(es []storage.Execution) []uuid.UUID {
	out := make([]uuid.UUID, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// newestFirst are the execution ids of bs, given oldest first, newest first.
func newestFirst(bs ...storage.Begin) []uuid.UUID {
	out := make([]uuid.UUID, len(bs))
	for i, b := range bs {
		out[len(bs)-1-i] = b.ExecutionID
	}
	return out
}

// pageAll lists q page by page, each page starting after the last item of
// the one before, and returns every page.
func (h *harness) pageAll(q storage.ExecutionQuery) [][]storage.Execution {
	h.t.Helper()
	var pages [][]storage.Execution
	for range 1000 {
		page := h.list(q)
		if len(page) == 0 {
			return pages
		}
		pages = append(pages, page)
		last := page[len(page)-1]
		q.After = &storage.ExecutionPosition{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	h.t.Fatal("paging never ended")
	return nil
}

func testAudit(t *testing.T, newStore newStoreFunc) {
	t.Run("ExecutionsKeepWhatAnAuditShows", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b, grant := h.granted("alice", "tool-a", "k1", t0)
		b.PriceUSD, b.FeeUSD = dec("0.10"), dec("0.01")
		b.Approval = toolgatetype.ApprovalKindGrant
		begun := h.begin(b)
		for _, e := range []storage.Execution{begun.Execution, h.get(b.ExecutionID)} {
			assert.Equal(t, "slug-tool-a", e.ToolSlug)
			assert.Equal(t, "sha256:tool-a", e.ManifestDigest)
			assertDecimal(t, "0.10", e.PriceUSD, "price")
			assertDecimal(t, "0.01", e.FeeUSD, "fee")
			assertDecimal(t, "0.11", e.AmountUSD, "total")
			assert.Equal(t, toolgatetype.ApprovalKindGrant, e.Approval)
			assert.Equal(t, grant.ID, e.GrantID)
		}
		h.finish(b, storage.ExecutionCompleted, `{}`, t0.Add(time.Second))
		listed := h.list(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: 10})
		require.Len(t, listed, 1)
		e := listed[0]
		assert.Equal(t, b.ExecutionID, e.ID)
		assert.Equal(t, "alice", e.Principal)
		assert.Equal(t, "tool-a", e.ToolID)
		assert.Equal(t, "slug-tool-a", e.ToolSlug)
		assert.Equal(t, "sha256:tool-a", e.ManifestDigest)
		assert.Equal(t, storage.ExecutionCompleted, e.Status)
		assert.True(t, e.Charged)
		assertDecimal(t, "0.10", e.PriceUSD, "price")
		assertDecimal(t, "0.01", e.FeeUSD, "fee")
		assertDecimal(t, "0.11", e.AmountUSD, "total")
		assert.Equal(t, toolgatetype.ApprovalKindGrant, e.Approval)
		assert.Equal(t, grant.ID, e.GrantID)
		assertTime(t, t0, e.CreatedAt)
		assertTime(t, t0.Add(time.Second), e.FinishedAt)
		assert.Nil(t, e.Response, "a listing never carries outputs")
	})

	t.Run("NewestFirstFinishedOnlyOwnOnly", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		first := h.call("alice", "tool-a", "0.11", "k1", storage.ExecutionCompleted, t0)
		second := h.call("alice", "tool-b", "0", "k2", storage.ExecutionFailed, t0.Add(time.Minute))
		h.admit("alice", "tool-a", "0.11", "running", t0.Add(2*time.Minute)) // never finished
		h.call("bob", "tool-a", "0.11", "k1", storage.ExecutionCompleted, t0.Add(3*time.Minute))
		third := h.call("alice", "tool-a", "0.11", "k3", storage.ExecutionCompleted, t0.Add(4*time.Minute))

		got := h.list(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: 10})
		assert.Equal(t, newestFirst(first, second, third), ids(got))
	})

	t.Run("SameInstantOrderedByID", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		var bs []storage.Begin
		for i := range 6 {
			bs = append(bs, h.call("alice", "tool-a", "0", fmt.Sprintf("k%d", i), storage.ExecutionCompleted, t0))
		}
		want := make([]uuid.UUID, 0, len(bs))
		for _, b := range bs {
			want = append(want, b.ExecutionID)
		}
		sortIDsDesc(want)
		got := h.list(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: 10})
		assert.Equal(t, want, ids(got))
		// Paging two by two through executions of one instant.
		var paged []uuid.UUID
		for _, p := range h.pageAll(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: 2}) {
			paged = append(paged, ids(p)...)
		}
		assert.Equal(t, want, paged)
	})

	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		a1 := h.call("alice", "tool-a", "0.11", "a1", storage.ExecutionCompleted, t0)
		b1 := h.call("alice", "tool-b", "0.11", "b1", storage.ExecutionFailed, t0.Add(time.Hour))
		a2 := h.call("alice", "tool-a", "0.11", "a2", storage.ExecutionFailed, t0.Add(2*time.Hour))
		b2 := h.call("alice", "tool-b", "0.11", "b2", storage.ExecutionCompleted, t0.Add(3*time.Hour))
		all := []string{"alice"}
		cases := []struct {
			name string
			q    storage.ExecutionQuery
			want []uuid.UUID
		}{
			{"tool", storage.ExecutionQuery{ToolSlug: "slug-tool-a"}, newestFirst(a1, a2)},
			{"status completed", storage.ExecutionQuery{Status: storage.ExecutionCompleted}, newestFirst(a1, b2)},
			{"status failed", storage.ExecutionQuery{Status: storage.ExecutionFailed}, newestFirst(b1, a2)},
			{"tool and status", storage.ExecutionQuery{ToolSlug: "slug-tool-b", Status: storage.ExecutionFailed}, newestFirst(b1)},
			{"since is inclusive", storage.ExecutionQuery{Since: t0.Add(time.Hour)}, newestFirst(b1, a2, b2)},
			{"until is exclusive", storage.ExecutionQuery{Until: t0.Add(2 * time.Hour)}, newestFirst(a1, b1)},
			{"window", storage.ExecutionQuery{Since: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour)}, newestFirst(b1, a2)},
			{"unknown tool", storage.ExecutionQuery{ToolSlug: "slug-tool-z"}, []uuid.UUID{}},
			{"limit", storage.ExecutionQuery{Limit: 3}, newestFirst(b1, a2, b2)},
			{"after", storage.ExecutionQuery{After: &storage.ExecutionPosition{CreatedAt: a2.Now, ID: a2.ExecutionID}}, newestFirst(a1, b1)},
		}
		for _, c := range cases {
			c.q.Principals = all
			if c.q.Limit == 0 {
				c.q.Limit = 10
			}
			assert.Equal(t, c.want, ids(h.list(c.q)), c.name)
		}
	})

	t.Run("SeveralPrincipalsMerged", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		var bs []storage.Begin
		for i := range 9 {
			principal := []string{"alice", "bob", "carol"}[i%3]
			bs = append(bs, h.call(principal, "tool-a", "0.11", fmt.Sprintf("k%d", i), storage.ExecutionCompleted, t0.Add(time.Duration(i)*time.Minute)))
		}
		h.call("dave", "tool-a", "0.11", "d", storage.ExecutionCompleted, t0.Add(time.Hour))
		q := storage.ExecutionQuery{Principals: []string{"carol", "alice", "bob", "alice"}, Limit: 4}
		var paged []uuid.UUID
		for _, p := range h.pageAll(q) {
			assert.LessOrEqual(t, len(p), 4)
			paged = append(paged, ids(p)...)
		}
		assert.Equal(t, newestFirst(bs...), paged, "every principal's executions once, newest first, and no one else's")
	})

	t.Run("PagingUnderConcurrentInserts", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		var existing []storage.Begin
		for i := range 25 {
			existing = append(existing, h.call("alice", "tool-a", "0.01", fmt.Sprintf("old-%d", i), storage.ExecutionCompleted, t0.Add(time.Duration(i)*time.Second)))
		}
		// While the pages are read, new calls keep arriving, each newer
		// than everything before it, and older calls finish.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					at := t0.Add(time.Hour + time.Duration(i)*time.Second)
					q := newQuote("alice", "tool-a", "0.01", at)
					if err := h.s.CreateQuote(h.ctx, q); err != nil {
						t.Error(err)
						return
					}
					b := beginFor(q, fmt.Sprintf("new-%d-%d", w, i), at)
					if _, err := h.s.BeginExecution(h.ctx, b); err != nil {
						t.Error(err)
						return
					}
					if err := h.s.FinishExecution(h.ctx, finishFor(b, storage.ExecutionCompleted, "{}", at)); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		first := h.list(storage.ExecutionQuery{Principals: []string{"alice"}, Until: t0.Add(time.Hour), Limit: 4})
		require.Len(t, first, 4)
		last := first[len(first)-1]
		seen := ids(first)
		for _, p := range h.pageAll(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: 4,
			After: &storage.ExecutionPosition{CreatedAt: last.CreatedAt, ID: last.ID}}) {
			seen = append(seen, ids(p)...)
		}
		close(stop)
		wg.Wait()
		assert.Equal(t, newestFirst(existing...), seen, "each execution that existed once, in order, none of the new ones")
	})

	t.Run("PrunedExecutionsAreNotListed", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.call("alice", "tool-a", "0.11", "old", storage.ExecutionCompleted, t0.Add(-48*time.Hour))
		recent := h.call("alice", "tool-a", "0.11", "recent", storage.ExecutionCompleted, t0)
		_, err := h.s.Prune(h.ctx, storage.Prune{IdempotencyBefore: t0.Add(-24 * time.Hour), Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, newestFirst(recent), ids(h.list(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: 10})))
	})

	t.Run("BadQueriesAreRefused", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		for name, q := range map[string]storage.ExecutionQuery{
			"no principal":  {Limit: 10},
			"limit 0":       {Principals: []string{"alice"}},
			"limit too big": {Principals: []string{"alice"}, Limit: storage.MaxListLimit + 1},
			"running":       {Principals: []string{"alice"}, Limit: 10, Status: storage.ExecutionRunning},
		} {
			_, err := h.s.ListExecutions(h.ctx, q)
			assert.Error(t, err, name)
		}
		for name, q := range map[string]storage.SpendQuery{
			"no principal": {GroupBy: toolgatetype.SpendByTool},
			"no grouping":  {Principals: []string{"alice"}},
		} {
			_, err := h.s.SpendSummary(h.ctx, q)
			assert.Error(t, err, name)
		}
	})

	t.Run("SpendSummary", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		day1 := time.Date(2030, time.March, 14, 23, 59, 59, 0, time.UTC)
		day2 := day1.Add(time.Second) // the next UTC day
		h.call("alice", "tool-a", "0.11", "a1", storage.ExecutionCompleted, day1)
		h.call("alice", "tool-a", "0.11", "a2", storage.ExecutionCompleted, day2)
		h.call("alice", "tool-b", "0.0011", "b1", storage.ExecutionCompleted, day2.Add(time.Hour))
		h.call("alice", "tool-b", "5.00", "failed", storage.ExecutionFailed, day2.Add(time.Hour))      // not charged
		h.admit("alice", "tool-b", "7.00", "running", day2.Add(2*time.Hour))                           // not yet charged
		h.call("alice", "tool-c", "0", "free", storage.ExecutionCompleted, day2.Add(3*time.Hour))      // counted, for nothing
		h.call("bob", "tool-a", "9.00", "bob", storage.ExecutionCompleted, day2)                       // not alice's
		h.call("alice", "tool-a", "3.00", "later", storage.ExecutionCompleted, day2.Add(48*time.Hour)) // outside the window

		window := storage.SpendQuery{Principals: []string{"alice"}, Since: day1, Until: day2.Add(24 * time.Hour)}
		byTool := window
		byTool.GroupBy = toolgatetype.SpendByTool
		got, err := h.s.SpendSummary(h.ctx, byTool)
		require.NoError(t, err)
		assertGroups(t, []storage.SpendGroup{
			{Key: "slug-tool-a", TotalUSD: dec("0.22"), Count: 2},
			{Key: "slug-tool-b", TotalUSD: dec("0.0011"), Count: 1},
			{Key: "slug-tool-c", TotalUSD: dec("0"), Count: 1},
		}, got)

		byDay := window
		byDay.GroupBy = toolgatetype.SpendByDay
		got, err = h.s.SpendSummary(h.ctx, byDay)
		require.NoError(t, err)
		assertGroups(t, []storage.SpendGroup{
			{Key: "2030-03-14", TotalUSD: dec("0.11"), Count: 1},
			{Key: "2030-03-15", TotalUSD: dec("0.1111"), Count: 3},
		}, got)

		// Since is inclusive, until exclusive; two principals add up.
		both := storage.SpendQuery{Principals: []string{"alice", "bob"}, Since: day2, Until: day2.Add(time.Hour), GroupBy: toolgatetype.SpendByTool}
		got, err = h.s.SpendSummary(h.ctx, both)
		require.NoError(t, err)
		assertGroups(t, []storage.SpendGroup{{Key: "slug-tool-a", TotalUSD: dec("9.11"), Count: 2}}, got)

		empty := storage.SpendQuery{Principals: []string{"nobody"}, GroupBy: toolgatetype.SpendByDay}
		got, err = h.s.SpendSummary(h.ctx, empty)
		require.NoError(t, err)
		assert.Empty(t, got)
	})
}

func assertGroups(t *testing.T, want, got []storage.SpendGroup) {
	t.Helper()
	require.Len(t, got, len(want), "%v", got)
	for i := range want {
		assert.Equal(t, want[i].Key, got[i].Key, "group %d", i)
		assertDecimal(t, want[i].TotalUSD.String(), got[i].TotalUSD, "group %s", want[i].Key)
		assert.Equal(t, want[i].Count, got[i].Count, "group %s", want[i].Key)
	}
}

// sortIDsDesc sorts ids as ListExecutions orders executions of one instant.
func sortIDsDesc(ids []uuid.UUID) {
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(b[:], a[:]) })
}

// get reads an execution and requires success.
func (h *harness) get(id uuid.UUID) storage.Execution {
	h.t.Helper()
	e, err := h.s.GetExecution(h.ctx, id)
	require.NoError(h.t, err)
	return e
}
