package storagetest

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// Approvers of budgets (contract section 30): an approval request keeps
// the budgets its principal counted in, and an approver's listing finds
// the requests of its budgets, whoever their principals are.

// countedIn stores a pending request of principal for a new quote that
// counted in budgets, naming approvers as a rule would, created at at.
func (h *harness) countedIn(principal string, budgets, approvers []string, at time.Time) storage.ApprovalRequest {
	h.t.Helper()
	r := newApprovalRequest(h.quote(principal, "tool-a", "0.11", at), `{"n":1}`)
	r.Budgets, r.Approvers = budgets, approvers
	require.NoError(h.t, h.s.CreateApprovalRequest(h.ctx, r))
	return r
}

func testRequestBudgets(t *testing.T, newStore newStoreFunc) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		r := h.countedIn("sub-1", []string{"search-team", "acme"}, nil, t0)
		assertApprovalRequest(t, r, h.stored(r.ID))
		none := h.countedIn("sub-1", []string{}, nil, t0.Add(time.Second))
		assert.Nil(t, h.stored(none.ID).Budgets, "an empty list reads back as none")

		decided, err := h.s.DecideApprovalRequest(h.ctx, storage.ApprovalDecision{ID: r.ID, Approve: true, DecidedBy: "leads", Now: t0})
		require.NoError(t, err)
		assert.Equal(t, r.Budgets, decided.Budgets, "in the decision")
		read, err := h.s.ReadBatch(h.ctx, storage.Reads{Principal: "sub-1", GrantID: r.ID})
		require.NoError(t, err)
		require.NotNil(t, read.Grant)
		assert.Equal(t, r.Budgets, read.Grant.Budgets, "in a grant read")
	})

	t.Run("AnApproverOfBudgetsSeesTheirRequests", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		search := h.countedIn("sub-1", []string{"search-team", "acme"}, nil, t0)
		other := h.countedIn("sub-2", []string{"ads-team", "acme"}, nil, t0.Add(time.Second))
		both := h.countedIn("sub-3", []string{"search-team", "ads-team", "acme"}, nil, t0.Add(2*time.Second))
		named := h.countedIn("sub-4", []string{"search-team"}, []string{"sre"}, t0.Add(3*time.Second))
		keyed := h.countedIn("alice", []string{"search-team"}, nil, t0.Add(4*time.Second))
		h.countedIn("sub-5", nil, nil, t0.Add(5*time.Second))

		leads := h.listed(storage.ApprovalRequestFilter{Approver: "leads", Budgets: []string{"search-team"}})
		assert.Equal(t, []uuid.UUID{keyed.ID, both.ID, search.ID}, requestIDs(leads),
			"the search team's, once each, and not one a rule named other approvers for")
		withPrincipal := h.listed(storage.ApprovalRequestFilter{Approver: "leads", Principals: []string{"alice", "sub-2"}, Budgets: []string{"search-team", "ads-team"}})
		assert.Equal(t, []uuid.UUID{keyed.ID, both.ID, other.ID, search.ID}, requestIDs(withPrincipal),
			"a request of a principal listed and of a budget listed comes once")
		org := h.listed(storage.ApprovalRequestFilter{Approver: "cfo", Budgets: []string{"acme"}})
		assert.Equal(t, []uuid.UUID{both.ID, other.ID, search.ID}, requestIDs(org))
		sre := h.listed(storage.ApprovalRequestFilter{Approver: "sre", Budgets: []string{"ads-team"}})
		assert.Equal(t, []uuid.UUID{named.ID, both.ID, other.ID}, requestIDs(sre), "the named one to the approver named")
		assert.Empty(t, h.listed(storage.ApprovalRequestFilter{Approver: "nobody", Budgets: []string{"nowhere"}}))

		h.decide(search.ID, true, "", t0.Add(6*time.Second))
		pending := h.listed(storage.ApprovalRequestFilter{Approver: "leads", Budgets: []string{"search-team"}, Statuses: []storage.ApprovalStatus{storage.ApprovalPending}})
		assert.Equal(t, []uuid.UUID{keyed.ID, both.ID}, requestIDs(pending))
	})

	t.Run("PagesNewestFirst", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		var want []storage.ApprovalRequest
		for i, at := range []time.Duration{0, time.Second, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
			budgets := []string{"search-team"}
			if i%3 == 0 {
				budgets = []string{"infra", "search-team"}
			}
			want = append(want, h.countedIn("sub-"+string(rune('a'+i)), budgets, nil, t0.Add(at)))
			h.countedIn("sub-z", []string{"ads-team"}, nil, t0.Add(at)) // another team's
		}
		want = append(want, h.askedOf("alice", nil, t0.Add(2*time.Second)))
		want = sortedNewestFirst(want)

		var got []storage.ApprovalRequest
		f := storage.ApprovalRequestFilter{Approver: "leads", Principals: []string{"alice"}, Budgets: []string{"infra", "search-team"}, Limit: 2}
		for range 10 {
			page := h.listed(f)
			require.LessOrEqual(t, len(page), 2)
			got = append(got, page...)
			if len(page) < 2 {
				break
			}
			last := page[len(page)-1]
			f.After = &storage.ApprovalCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		assert.Equal(t, requestIDs(want), requestIDs(got), "every request once, newest first, across the pages")
	})

	t.Run("PruneTakesThemFromTheBudgetsView", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		h.countedIn("sub-1", []string{"search-team"}, nil, t0.Add(-48*time.Hour))
		recent := h.countedIn("sub-1", []string{"search-team"}, nil, t0.Add(-time.Hour))
		res, err := h.s.Prune(h.ctx, storage.Prune{ApprovalRequestsBefore: t0.Add(-24 * time.Hour), Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, 1, res.ApprovalRequests)
		assert.Equal(t, []uuid.UUID{recent.ID}, requestIDs(h.listed(storage.ApprovalRequestFilter{Approver: "leads", Budgets: []string{"search-team"}})))
	})
}
