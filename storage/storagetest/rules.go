package storagetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// What the organization's rules (contract section 29) leave in a store: an
// approval request an "ask" rule made names the approvers who alone see
// and decide it, and an execution keeps the rules that matched its call.

// askedOf stores a pending request of principal for a new quote, naming
// approvers as a rule would (none: an ordinary request), created at at.
func (h *harness) askedOf(principal string, approvers []string, at time.Time) storage.ApprovalRequest {
	h.t.Helper()
	r := newApprovalRequest(h.quote(principal, "tool-a", "0.11", at), `{"n":1}`)
	r.Approvers = approvers
	require.NoError(h.t, h.s.CreateApprovalRequest(h.ctx, r))
	return r
}

// listed lists f with a page that holds everything, and requires success.
func (h *harness) listed(f storage.ApprovalRequestFilter) []storage.ApprovalRequest {
	h.t.Helper()
	if f.Limit == 0 {
		f.Limit = anyPage
	}
	got, err := h.s.ListApprovalRequests(h.ctx, f)
	require.NoError(h.t, err)
	return got
}

// someRules are what two rules that matched a call leave on it: one that
// asked, and one watched in audit mode.
func someRules() []storage.RuleUse {
	return []storage.RuleUse{
		{Name: "big-calls-need-a-lead", Effect: "ask", Mode: "enforce"},
		{Name: "try-weather-limit", Effect: "deny", Mode: "audit"},
	}
}

func testRules(t *testing.T, newStore newStoreFunc) {
	t.Run("ApproversRoundTrip", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		named := h.askedOf("alice", []string{"leads", "sre-oncall"}, t0)
		assertApprovalRequest(t, named, h.stored(named.ID))
		ordinary := h.askedOf("alice", nil, t0.Add(time.Second))
		assert.Nil(t, h.stored(ordinary.ID).Approvers, "a request no rule named approvers for names none")
		empty := h.askedOf("alice", []string{}, t0.Add(2*time.Second))
		assert.Nil(t, h.stored(empty.ID).Approvers, "an empty list reads back as none")

		mine := h.listed(storage.ApprovalRequestFilter{Principals: []string{"alice"}})
		require.Equal(t, []uuid.UUID{empty.ID, ordinary.ID, named.ID}, requestIDs(mine))
		assert.Equal(t, named.Approvers, mine[2].Approvers, "in a listing")
		assert.Nil(t, mine[1].Approvers)

		// The same request asked again is answered with the pending one,
		// its approvers included.
		again := named
		again.ID = uuid.New()
		var pending *storage.PendingRequestError
		require.ErrorAs(t, h.s.CreateApprovalRequest(h.ctx, again), &pending)
		assert.Equal(t, named.ID, pending.Pending.ID)
		assert.Equal(t, named.Approvers, pending.Pending.Approvers, "in the pending answer")

		decided, err := h.s.DecideApprovalRequest(h.ctx, storage.ApprovalDecision{ID: named.ID, Approve: true, DecidedBy: "leads", Now: t0})
		require.NoError(t, err)
		assert.Equal(t, named.Approvers, decided.Approvers, "in the decision")

		read, err := h.s.ReadBatch(h.ctx, storage.Reads{Principal: "alice", GrantID: named.ID})
		require.NoError(t, err)
		require.NotNil(t, read.Grant)
		assert.Equal(t, named.Approvers, read.Grant.Approvers, "in a grant read")
	})

	t.Run("ApproversAreCopied", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		approvers := []string{"leads"}
		r := h.askedOf("alice", approvers, t0)
		approvers[0] = "mallory" // the caller reuses its slice
		got := h.stored(r.ID)
		assert.Equal(t, []string{"leads"}, got.Approvers)
		got.Approvers[0] = "mallory"
		assert.Equal(t, []string{"leads"}, h.stored(r.ID).Approvers)
		assert.Equal(t, []uuid.UUID{r.ID}, requestIDs(h.listed(storage.ApprovalRequestFilter{Approver: "leads"})))
	})

	t.Run("AnApproverSeesWhatIsNamedForIt", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// alice's approver is pat, bob's is sam; a rule asked leads (and
		// for one call sre too) for some of alice's calls.
		aliceOwn := h.askedOf("alice", nil, t0)
		forLeads := h.askedOf("alice", []string{"leads"}, t0.Add(time.Second))
		bobOwn := h.askedOf("bob", nil, t0.Add(2*time.Second))
		forBoth := h.askedOf("alice", []string{"sre", "leads"}, t0.Add(3*time.Second))
		carolForSRE := h.askedOf("carol", []string{"sre"}, t0.Add(4*time.Second))

		cases := []struct {
			name   string
			filter storage.ApprovalRequestFilter
			want   []storage.ApprovalRequest
		}{
			{"NamedOnesToANamedApproverWhoApprovesNoOne",
				storage.ApprovalRequestFilter{Approver: "leads"}, []storage.ApprovalRequest{forBoth, forLeads}},
			{"NotToThePrincipalsOwnApprover",
				storage.ApprovalRequestFilter{Approver: "pat", Principals: []string{"alice"}}, []storage.ApprovalRequest{aliceOwn}},
			{"NamedOnesAndThePrincipalsOrdinaryOnes",
				storage.ApprovalRequestFilter{Approver: "leads", Principals: []string{"bob"}}, []storage.ApprovalRequest{forBoth, bobOwn, forLeads}},
			{"NamedOnesWhateverThePrincipals",
				storage.ApprovalRequestFilter{Approver: "leads", Principals: []string{"alice", "bob"}},
				[]storage.ApprovalRequest{forBoth, bobOwn, forLeads, aliceOwn}},
			{"EachNamedApprover",
				storage.ApprovalRequestFilter{Approver: "sre", Principals: []string{"bob"}}, []storage.ApprovalRequest{carolForSRE, forBoth, bobOwn}},
			{"WithoutAnApproverByPrincipalsAsBefore",
				storage.ApprovalRequestFilter{Principals: []string{"alice"}}, []storage.ApprovalRequest{forBoth, forLeads, aliceOwn}},
			{"WithoutAnApproverOrPrincipalsNothing", storage.ApprovalRequestFilter{}, nil},
			{"AndTheOtherFilters",
				storage.ApprovalRequestFilter{Approver: "leads", Principals: []string{"bob"}, ToolID: "tool-a",
					InputSHA256: forLeads.InputSHA256, Statuses: []storage.ApprovalStatus{storage.ApprovalPending}, LiveAt: t0},
				[]storage.ApprovalRequest{forBoth, bobOwn, forLeads}},
			{"AndAnotherInput",
				storage.ApprovalRequestFilter{Approver: "leads", ToolID: "tool-a", InputSHA256: "0"}, nil},
		}
		for _, c := range cases {
			assert.Equal(t, requestIDs(c.want), requestIDs(h.listed(c.filter)), c.name)
		}

		// A decided request leaves a view of pending ones.
		h.decide(forBoth.ID, false, "", t0.Add(5*time.Second))
		pendingOnly := h.listed(storage.ApprovalRequestFilter{Approver: "leads", Statuses: []storage.ApprovalStatus{storage.ApprovalPending}})
		assert.Equal(t, []uuid.UUID{forLeads.ID}, requestIDs(pendingOnly))
	})

	t.Run("AnApproversViewPagesNewestFirst", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// Named and ordinary requests interleaved, some at one instant.
		var want []storage.ApprovalRequest
		for i, at := range []time.Duration{0, time.Second, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
			var approvers []string
			if i%2 == 0 {
				approvers = []string{"leads"}
			}
			want = append(want, h.askedOf("alice", approvers, t0.Add(at)))
			h.askedOf("alice", []string{"sre"}, t0.Add(at)) // another's
		}
		want = sortedNewestFirst(want)

		var got []storage.ApprovalRequest
		f := storage.ApprovalRequestFilter{Approver: "leads", Principals: []string{"alice"}, Limit: 2}
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

	t.Run("PruneTakesNamedRequestsFromTheApproversView", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		old := h.askedOf("alice", []string{"leads"}, t0.Add(-48*time.Hour))
		recent := h.askedOf("alice", []string{"leads"}, t0.Add(-time.Hour))
		res, err := h.s.Prune(h.ctx, storage.Prune{ApprovalRequestsBefore: t0.Add(-24 * time.Hour), Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, 1, res.ApprovalRequests)
		_, err = h.s.GetApprovalRequest(h.ctx, old.ID)
		assert.ErrorIs(t, err, storage.ErrNotFound)
		assert.Equal(t, []uuid.UUID{recent.ID}, requestIDs(h.listed(storage.ApprovalRequestFilter{Approver: "leads"})))
	})

	t.Run("AnExecutionKeepsItsRules", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := beginFor(h.quote("alice", "tool-a", "0.11", t0), "key-1", t0)
		b.Rules = someRules()
		res := h.begin(b)
		assert.Equal(t, someRules(), res.Execution.Rules, "as admitted")
		assert.Equal(t, someRules(), h.get(b.ExecutionID).Rules, "running")

		h.finish(b, storage.ExecutionCompleted, `{}`, t0.Add(time.Second))
		assert.Equal(t, someRules(), h.get(b.ExecutionID).Rules, "finished")
		listed := h.list(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: anyPage})
		require.Len(t, listed, 1)
		assert.Equal(t, someRules(), listed[0].Rules, "in the listing")
	})

	t.Run("NoRulesReadBackNil", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		for i, rules := range [][]storage.RuleUse{nil, {}} {
			b := beginFor(h.quote("alice", "tool-a", "0.11", t0.Add(time.Duration(i)*time.Second)), uuid.NewString(), t0)
			b.Rules = rules
			assert.Nil(t, h.begin(b).Execution.Rules, "as admitted")
			assert.Nil(t, h.get(b.ExecutionID).Rules, "running")
			h.finish(b, storage.ExecutionFailed, `{}`, t0.Add(time.Minute))
		}
		listed := h.list(storage.ExecutionQuery{Principals: []string{"alice"}, Limit: anyPage})
		require.Len(t, listed, 2)
		for _, e := range listed {
			assert.Nil(t, e.Rules, "in the listing")
		}
	})

	t.Run("RulesAreCopied", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := beginFor(h.quote("alice", "tool-a", "0.11", t0), "key-1", t0)
		b.Rules = someRules()
		res := h.begin(b)
		b.Rules[0].Name = "changed" // the caller reuses its slice
		res.Execution.Rules[1].Name = "changed"
		got := h.get(b.ExecutionID)
		assert.Equal(t, someRules(), got.Rules)
		got.Rules[0].Name = "changed"
		assert.Equal(t, someRules(), h.get(b.ExecutionID).Rules)
	})

	t.Run("ATakeoverAndAResolutionKeepTheRules", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := beginFor(h.quote("alice", "tool-a", "0.11", t0), "key-1", t0)
		b.Rules = someRules()
		h.begin(b)
		retry := b
		retry.LeaseToken, retry.Now, retry.ExecutionID, retry.Rules = uuid.New(), t0.Add(2*lease), uuid.New(), nil
		retry.LeaseUntil = retry.Now.Add(lease)
		res := h.begin(retry)
		require.True(t, res.TookOver)
		assert.Equal(t, someRules(), res.Execution.Rules, "the execution taken over is the one admitted")

		b.LeaseToken = retry.LeaseToken
		h.finish(b, storage.ExecutionAmbiguous, `{}`, retry.Now)
		resolved := h.resolve(resolveFor(b.ExecutionID, storage.ExecutionCompleted, "pat", retry.Now.Add(time.Minute)))
		assert.Equal(t, someRules(), resolved.Rules)
	})

	t.Run("AdmitCallKeepsTheRules", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		b := beginFor(q, "key-1", t0)
		b.Rules = someRules()
		reads := storage.Reads{Principal: "alice", Approval: true, ToolID: q.ToolID, SpendControls: true, QuoteID: q.ID}
		res, err := h.s.AdmitCall(h.ctx, reads, func(storage.ReadResult) (storage.Begin, error) { return b, nil })
		require.NoError(t, err)
		assert.Equal(t, someRules(), res.Execution.Rules)
		assert.Equal(t, someRules(), h.get(b.ExecutionID).Rules)
	})

	t.Run("ConcurrentAdmissionsKeepTheirOwnRules", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// Admissions at once may go together (a store's batch): each
		// keeps the rules it was given, and one with none keeps none.
		const n = 12
		bs := make([]storage.Begin, n)
		for i := range bs {
			principal := []string{"alice", "bob", "carol"}[i%3]
			bs[i] = beginFor(h.quote(principal, "tool-a", "0.11", t0), uuid.NewString(), t0)
			if i%4 != 0 {
				bs[i].Rules = []storage.RuleUse{{Name: "rule-" + uuid.NewString(), Effect: "ask", Mode: "enforce"}}
			}
		}
		var (
			mu   sync.Mutex
			errs []error
		)
		race(n, func(i int) {
			res, err := h.s.BeginExecution(h.ctx, bs[i])
			if err == nil && !assert.ObjectsAreEqual(bs[i].Rules, res.Execution.Rules) {
				err = errors.New("admitted with other rules")
			}
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		for _, b := range bs {
			assert.Equal(t, b.Rules, h.get(b.ExecutionID).Rules)
		}
	})
}
