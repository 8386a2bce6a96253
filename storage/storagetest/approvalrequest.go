package storagetest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// newApprovalRequest builds a pending request for quote q, created at q's
// creation and expiring with it.
func newApprovalRequest(q storage.Quote, input string) storage.ApprovalRequest {
	sum := sha256.Sum256([]byte(input))
	return storage.ApprovalRequest{
		ID:             uuid.New(),
		Principal:      q.Principal,
		QuoteID:        q.ID,
		ToolID:         q.ToolID,
		ToolSlug:       q.ToolSlug,
		ManifestDigest: q.ManifestDigest,
		PriceUSD:       q.PriceUSD,
		FeeUSD:         q.FeeUSD,
		TotalUSD:       q.TotalUSD,
		Input:          []byte(input),
		InputSHA256:    hex.EncodeToString(sum[:]),
		Status:         storage.ApprovalPending,
		CreatedAt:      q.CreatedAt,
		ExpiresAt:      q.ExpiresAt,
	}
}

// request stores a pending request for a new quote of principal.
func (h *harness) request(principal, toolID string, at time.Time) (storage.Quote, storage.ApprovalRequest) {
	h.t.Helper()
	q := h.quote(principal, toolID, "0.11", at)
	r := newApprovalRequest(q, `{"n":1}`)
	require.NoError(h.t, h.s.CreateApprovalRequest(h.ctx, r))
	return q, r
}

// decide decides r at time at and requires success.
func (h *harness) decide(id uuid.UUID, approve bool, remember toolgatetype.StandingMode, at time.Time) storage.ApprovalRequest {
	h.t.Helper()
	got, err := h.s.DecideApprovalRequest(h.ctx, storage.ApprovalDecision{ID: id, Approve: approve, DecidedBy: "pat", Remember: remember, Now: at})
	require.NoError(h.t, err)
	return got
}

// granted stores an approved request for a new quote of principal, and
// returns the Begin that a call using it would send.
func (h *harness) granted(principal, toolID, key string, at time.Time) (storage.Begin, storage.ApprovalRequest) {
	h.t.Helper()
	q, r := h.request(principal, toolID, at)
	h.decide(r.ID, true, "", at)
	b := beginFor(q, key, at)
	b.GrantID = r.ID
	return b, r
}

// requestIDs are the ids of rs, in order.
func requestIDs(rs []storage.ApprovalRequest) []uuid.UUID {
	out := []uuid.UUID{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// stored reads an approval request back.
func (h *harness) stored(id uuid.UUID) storage.ApprovalRequest {
	h.t.Helper()
	r, err := h.s.GetApprovalRequest(h.ctx, id)
	require.NoError(h.t, err)
	return r
}

func testApprovalRequests(t *testing.T, newStore newStoreFunc) {
	t.Run("CreateGetRoundTrip", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		want := newApprovalRequest(q, `{"goal":"<script>alert(1)</script>","step":1}`)
		want.FeeUSD = dec("0.0100")
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, want))
		assertApprovalRequest(t, want, h.stored(want.ID))

		again := newApprovalRequest(q, `{}`)
		again.ID = want.ID
		assert.ErrorIs(t, h.s.CreateApprovalRequest(h.ctx, again), storage.ErrAlreadyExists)
		assertApprovalRequest(t, want, h.stored(want.ID))

		_, err := h.s.GetApprovalRequest(h.ctx, uuid.New())
		assert.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("Decide", func(t *testing.T) {
		cases := []struct {
			name    string
			approve bool
			status  storage.ApprovalStatus
		}{
			{"Approve", true, storage.ApprovalApproved},
			{"Deny", false, storage.ApprovalDenied},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				_, r := h.request("alice", "tool-a", t0)
				at := t0.Add(time.Minute)
				got := h.decide(r.ID, c.approve, "", at)

				want := r
				want.Status, want.DecidedBy, want.DecidedAt = c.status, "pat", at
				assertApprovalRequest(t, want, got)
				assertApprovalRequest(t, want, h.stored(r.ID))

				// A decision is final, whichever way the second one goes.
				for _, second := range []bool{true, false} {
					_, err := h.s.DecideApprovalRequest(h.ctx, storage.ApprovalDecision{ID: r.ID, Approve: second, DecidedBy: "sam", Now: at})
					assert.ErrorIs(t, err, storage.ErrAlreadyDecided)
				}
				assertApprovalRequest(t, want, h.stored(r.ID))
			})
		}
	})

	t.Run("DecideRefusals", func(t *testing.T) {
		cases := []struct {
			name string
			id   func(r storage.ApprovalRequest) uuid.UUID
			at   time.Duration // after the request's creation
			want error
		}{
			{"Missing", func(storage.ApprovalRequest) uuid.UUID { return uuid.New() }, time.Minute, storage.ErrNotFound},
			{"AtExpiry", func(r storage.ApprovalRequest) uuid.UUID { return r.ID }, 5 * time.Minute, storage.ErrApprovalExpired},
			{"AfterExpiry", func(r storage.ApprovalRequest) uuid.UUID { return r.ID }, time.Hour, storage.ErrApprovalExpired},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				_, r := h.request("alice", "tool-a", t0)
				for _, approve := range []bool{true, false} {
					_, err := h.s.DecideApprovalRequest(h.ctx, storage.ApprovalDecision{
						ID: c.id(r), Approve: approve, DecidedBy: "pat", Remember: toolgatetype.ApprovalNeverAsk, Now: t0.Add(c.at)})
					assert.ErrorIs(t, err, c.want)
				}
				assertApprovalRequest(t, r, h.stored(r.ID))
				_, err := h.s.GetApproval(h.ctx, "alice", "tool-a")
				assert.ErrorIs(t, err, storage.ErrNotFound, "a refused decision remembers nothing")
			})
		}
	})

	t.Run("ApproveRemembers", func(t *testing.T) {
		cases := []struct {
			name     string
			approve  bool
			remember toolgatetype.StandingMode
			stored   bool
		}{
			{"ApproveNeverAsk", true, toolgatetype.ApprovalNeverAsk, true},
			{"ApproveAskChargedCalls", true, toolgatetype.ApprovalAskChargedCalls, true},
			{"ApproveFirstUse", true, toolgatetype.ApprovalFirstUse, true},
			{"ApproveOnce", true, "", false},
			{"ApproveOnceRecordsOnce", true, toolgatetype.ApprovalOnce, false},
			{"DenyRemembersNothing", false, toolgatetype.ApprovalNeverAsk, false},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				// An earlier approval of another digest, set by the caller,
				// is replaced by what the approver remembers.
				require.NoError(t, h.s.PutApproval(h.ctx, approval("alice", "tool-a", "sha256:old", toolgatetype.ApprovalAskEveryCall)))
				_, r := h.request("alice", "tool-a", t0)
				got := h.decide(r.ID, c.approve, c.remember, t0.Add(time.Second))
				a, err := h.s.GetApproval(h.ctx, "alice", "tool-a")
				require.NoError(t, err)
				if !c.stored {
					// "once" is recorded on the request, as what the
					// approve applied, and stores no standing approval.
					want := toolgatetype.StandingMode("")
					if c.approve {
						want = c.remember
					}
					assert.Equal(t, want, got.Remember)
					assert.Equal(t, want, h.stored(r.ID).Remember)
					assertApproval(t, approval("alice", "tool-a", "sha256:old", toolgatetype.ApprovalAskEveryCall), a)
					return
				}
				assert.Equal(t, c.remember, got.Remember)
				assert.Equal(t, c.remember, h.stored(r.ID).Remember)
				want := approval("alice", "tool-a", r.ManifestDigest, c.remember)
				want.ApprovedBy, want.UpdatedAt = "pat", t0.Add(time.Second)
				assertApproval(t, want, a)
			})
		}
	})

	t.Run("ListNewestFirstWithCursor", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// Seven requests of alice, three created at the same instant, and
		// requests of bob and carol in between.
		var alice []storage.ApprovalRequest
		for i, at := range []time.Duration{0, time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second} {
			_, r := h.request("alice", "tool-a", t0.Add(at))
			alice = append(alice, r)
			if i%2 == 0 {
				h.request("bob", "tool-a", t0.Add(at))
				h.request("carol", "tool-a", t0.Add(at))
			}
		}
		want := sortedNewestFirst(alice)

		var got []storage.ApprovalRequest
		f := storage.ApprovalRequestFilter{Principals: []string{"alice"}, Limit: 3}
		for range 10 {
			page, err := h.s.ListApprovalRequests(h.ctx, f)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 3)
			got = append(got, page...)
			if len(page) < 3 {
				break
			}
			last := page[len(page)-1]
			f.After = &storage.ApprovalCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		require.Len(t, got, len(want), "every request once, across the pages")
		for i := range want {
			assert.Equal(t, want[i].ID, got[i].ID, "position %d", i)
		}

		both, err := h.s.ListApprovalRequests(h.ctx, storage.ApprovalRequestFilter{Principals: []string{"alice", "bob"}, Limit: anyPage})
		require.NoError(t, err)
		assert.Len(t, both, 7+4)
		for i := 1; i < len(both); i++ {
			cur := storage.ApprovalCursor{CreatedAt: both[i-1].CreatedAt, ID: both[i-1].ID}
			assert.True(t, cur.After(both[i]), "newest first across principals, at %d", i)
			assert.NotEqual(t, "carol", both[i].Principal)
		}

		none, err := h.s.ListApprovalRequests(h.ctx, storage.ApprovalRequestFilter{Limit: anyPage})
		require.NoError(t, err)
		assert.Empty(t, none, "no principals, nothing listed")
	})

	t.Run("ListFilters", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		_, pending := h.request("alice", "tool-a", t0)
		_, approved := h.request("alice", "tool-a", t0.Add(time.Second))
		h.decide(approved.ID, true, "", t0.Add(time.Second))
		_, denied := h.request("alice", "tool-a", t0.Add(2*time.Second))
		h.decide(denied.ID, false, "", t0.Add(2*time.Second))
		_, old := h.request("alice", "tool-a", t0.Add(-time.Hour)) // expired at t0-55m

		cases := []struct {
			name   string
			filter storage.ApprovalRequestFilter
			want   []storage.ApprovalRequest
		}{
			{"All", storage.ApprovalRequestFilter{}, []storage.ApprovalRequest{denied, approved, pending, old}},
			{"Pending", storage.ApprovalRequestFilter{Statuses: []storage.ApprovalStatus{storage.ApprovalPending}}, []storage.ApprovalRequest{pending, old}},
			{"PendingAndLive", storage.ApprovalRequestFilter{Statuses: []storage.ApprovalStatus{storage.ApprovalPending}, LiveAt: t0}, []storage.ApprovalRequest{pending}},
			{"Expired", storage.ApprovalRequestFilter{ExpiredAt: t0}, []storage.ApprovalRequest{old}},
			{"ApprovedOrDenied", storage.ApprovalRequestFilter{Statuses: []storage.ApprovalStatus{storage.ApprovalApproved, storage.ApprovalDenied}}, []storage.ApprovalRequest{denied, approved}},
			{"LiveAtExpiryIsNotLive", storage.ApprovalRequestFilter{LiveAt: denied.ExpiresAt}, nil},
		}
		for _, c := range cases {
			c.filter.Principals, c.filter.Limit = []string{"alice", "nobody"}, anyPage
			got, err := h.s.ListApprovalRequests(h.ctx, c.filter)
			require.NoError(t, err, c.name)
			assert.Equal(t, requestIDs(c.want), requestIDs(got), c.name)
		}
	})

	t.Run("ListOneCall", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		// ask stores a request of principal for toolID and input at at.
		ask := func(principal, toolID, input string, at time.Time) storage.ApprovalRequest {
			r := newApprovalRequest(h.quote(principal, toolID, "0.11", at), input)
			require.NoError(t, h.s.CreateApprovalRequest(h.ctx, r))
			return r
		}
		first := ask("alice", "tool-a", `{"n":1}`, t0)
		h.decide(first.ID, false, "", t0)
		second := ask("alice", "tool-a", `{"n":1}`, t0.Add(time.Second))
		// Requests of other calls, some newer: another input, another
		// tool, another principal.
		other := ask("alice", "tool-a", `{"n":2}`, t0.Add(2*time.Second))
		ask("alice", "tool-b", `{"n":1}`, t0.Add(3*time.Second))
		ask("bob", "tool-a", `{"n":1}`, t0.Add(4*time.Second))

		cases := []struct {
			name   string
			filter storage.ApprovalRequestFilter
			want   []storage.ApprovalRequest
		}{
			{"TheCall", storage.ApprovalRequestFilter{ToolID: "tool-a", InputSHA256: first.InputSHA256}, []storage.ApprovalRequest{second, first}},
			{"NewestOnly", storage.ApprovalRequestFilter{ToolID: "tool-a", InputSHA256: first.InputSHA256, Limit: 1}, []storage.ApprovalRequest{second}},
			{"WithStatus", storage.ApprovalRequestFilter{ToolID: "tool-a", InputSHA256: first.InputSHA256,
				Statuses: []storage.ApprovalStatus{storage.ApprovalDenied}}, []storage.ApprovalRequest{first}},
			{"AnotherInput", storage.ApprovalRequestFilter{ToolID: "tool-a", InputSHA256: other.InputSHA256}, []storage.ApprovalRequest{other}},
			{"ToolOnly", storage.ApprovalRequestFilter{ToolID: "tool-a"}, []storage.ApprovalRequest{other, second, first}},
			{"InputOnly", storage.ApprovalRequestFilter{InputSHA256: other.InputSHA256}, []storage.ApprovalRequest{other}},
			{"NoSuchInput", storage.ApprovalRequestFilter{ToolID: "tool-a", InputSHA256: strings.Repeat("0", 64)}, nil},
		}
		for _, c := range cases {
			c.filter.Principals = []string{"alice"}
			if c.filter.Limit == 0 {
				c.filter.Limit = anyPage
			}
			got, err := h.s.ListApprovalRequests(h.ctx, c.filter)
			require.NoError(t, err, c.name)
			assert.Equal(t, requestIDs(c.want), requestIDs(got), c.name)
		}
	})

	t.Run("BeginUsesTheGrant", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b, r := h.granted("alice", "tool-a", "key-1", t0)
		res := h.begin(b)
		assertRunning(t, b, res.Execution)
		used := h.stored(r.ID)
		assert.Equal(t, storage.ApprovalUsed, used.Status)
		assert.Equal(t, b.ExecutionID, used.ExecutionID)
		assert.Equal(t, "pat", used.DecidedBy, "using a grant keeps who approved it")

		// The same grant again, under another key and quote, is refused.
		q2 := h.quote("alice", "tool-a", "0.11", t0)
		again := beginFor(q2, "key-2", t0)
		again.GrantID = r.ID
		_, err := h.s.BeginExecution(h.ctx, again)
		assert.ErrorIs(t, err, storage.ErrGrantUnusable)
		h.assertKeyFree("alice", "key-2")
		h.assertQuoteOpen(q2.ID)
	})

	t.Run("BeginRefusesAnUnusableGrantAndWritesNothing", func(t *testing.T) {
		cases := []struct {
			name string
			// prepare returns the Begin to send, after setting its grant up.
			prepare func(h *harness) storage.Begin
		}{
			{"Pending", func(h *harness) storage.Begin {
				q, r := h.request("alice", "tool-a", t0)
				b := beginFor(q, "key-1", t0)
				b.GrantID = r.ID
				return b
			}},
			{"Denied", func(h *harness) storage.Begin {
				q, r := h.request("alice", "tool-a", t0)
				h.decide(r.ID, false, "", t0)
				b := beginFor(q, "key-1", t0)
				b.GrantID = r.ID
				return b
			}},
			{"Missing", func(h *harness) storage.Begin {
				b := beginFor(h.quote("alice", "tool-a", "0.11", t0), "key-1", t0)
				b.GrantID = uuid.New()
				return b
			}},
			{"AnotherQuote", func(h *harness) storage.Begin {
				b, _ := h.granted("alice", "tool-a", "key-1", t0)
				b.QuoteID = h.quote("alice", "tool-a", "0.11", t0).ID
				return b
			}},
			{"AnotherTool", func(h *harness) storage.Begin {
				b, _ := h.granted("alice", "tool-a", "key-1", t0)
				b.ToolID = "tool-b"
				return b
			}},
			{"AnotherPrincipal", func(h *harness) storage.Begin {
				_, r := h.granted("bob", "tool-a", "key-1", t0)
				b := beginFor(h.quote("alice", "tool-a", "0.11", t0), "key-1", t0)
				b.GrantID = r.ID
				return b
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				b := c.prepare(h)
				before, _ := h.s.GetApprovalRequest(h.ctx, b.GrantID)
				_, err := h.s.BeginExecution(h.ctx, b)
				assert.ErrorIs(t, err, storage.ErrGrantUnusable)
				h.assertKeyFree("alice", "key-1")
				h.assertQuoteOpen(b.QuoteID)
				h.assertUsed("alice", "0", "0")
				after, _ := h.s.GetApprovalRequest(h.ctx, b.GrantID)
				assert.Equal(t, before.Status, after.Status, "the grant is left as it was")
			})
		}
	})

	t.Run("AQuoteUsedIsReportedBeforeTheGrant", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b, r := h.granted("alice", "tool-a", "key-1", t0)
		h.begin(b)
		again := beginFor(storage.Quote{ID: b.QuoteID, Principal: "alice", ToolID: "tool-a", TotalUSD: b.AmountUSD}, "key-2", t0)
		again.GrantID = r.ID
		_, err := h.s.BeginExecution(h.ctx, again)
		assert.ErrorIs(t, err, storage.ErrQuoteUsed, "two calls on one grant: the second finds its quote used")
	})

	t.Run("ARefusalLaterInAdmissionLeavesTheGrant", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b, r := h.granted("alice", "tool-a", "key-1", t0)
		b.Limits = []storage.Limit{spendLimit("", t0.Add(-time.Hour), "0.05")}
		_, err := h.s.BeginExecution(h.ctx, b)
		var le *storage.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, storage.ApprovalApproved, h.stored(r.ID).Status, "the grant can still be used")
		h.assertQuoteOpen(b.QuoteID)

		// Corrected, the same call goes through with the same grant.
		b.Limits = nil
		h.begin(b)
		assert.Equal(t, storage.ApprovalUsed, h.stored(r.ID).Status)
	})

	t.Run("ATakeoverDoesNotUseTheGrantAgain", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b, r := h.granted("alice", "tool-a", "key-1", t0)
		first := h.begin(b)

		retry := b
		retry.ExecutionID, retry.LeaseToken = uuid.New(), uuid.New()
		retry.Now = t0.Add(2 * lease)
		retry.LeaseUntil = retry.Now.Add(lease)
		res := h.begin(retry)
		assert.True(t, res.TookOver)
		assert.Equal(t, first.Execution.ID, res.Execution.ID)
		used := h.stored(r.ID)
		assert.Equal(t, storage.ApprovalUsed, used.Status)
		assert.Equal(t, b.ExecutionID, used.ExecutionID, "still the execution that used it")
		h.assertUsed("alice", "0.11", "1")
	})

	t.Run("PruneDeletesExpiredRequests", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		_, old := h.request("alice", "tool-a", t0.Add(-48*time.Hour))
		_, oldDecided := h.request("alice", "tool-a", t0.Add(-47*time.Hour))
		h.decide(oldDecided.ID, false, "", t0.Add(-47*time.Hour))
		_, recent := h.request("alice", "tool-a", t0.Add(-time.Hour))

		res, err := h.s.Prune(h.ctx, storage.Prune{ApprovalRequestsBefore: t0.Add(-24 * time.Hour), Limit: pruneAll})
		require.NoError(t, err)
		assert.Equal(t, storage.PruneResult{ApprovalRequests: 2}, res)
		for _, id := range []uuid.UUID{old.ID, oldDecided.ID} {
			_, err := h.s.GetApprovalRequest(h.ctx, id)
			assert.ErrorIs(t, err, storage.ErrNotFound)
		}
		h.stored(recent.ID)
		list, err := h.s.ListApprovalRequests(h.ctx, storage.ApprovalRequestFilter{Principals: []string{"alice"}, Limit: anyPage})
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, recent.ID, list[0].ID)

		res, err = h.s.Prune(h.ctx, storage.Prune{ApprovalRequestsBefore: t0.Add(-24 * time.Hour), Limit: 1})
		require.NoError(t, err)
		assert.Equal(t, storage.PruneResult{}, res)
	})

	t.Run("InputIsCopied", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		r := newApprovalRequest(q, `{"n":1}`)
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, r))
		r.Input[0] = 'X' // the caller reuses its buffer
		got := h.stored(r.ID)
		assert.Equal(t, `{"n":1}`, string(got.Input))
		got.Input[0] = 'Y'
		list, err := h.s.ListApprovalRequests(h.ctx, storage.ApprovalRequestFilter{Principals: []string{"alice"}, Limit: anyPage})
		require.NoError(t, err)
		assert.Equal(t, `{"n":1}`, string(list[0].Input))
		list[0].Input[0] = 'Z'
		decided := h.decide(r.ID, true, "", t0)
		assert.Equal(t, `{"n":1}`, string(decided.Input))
		decided.Input[0] = 'W'
		assert.Equal(t, `{"n":1}`, string(h.stored(r.ID).Input))
	})
}

// sortedNewestFirst orders requests as ListApprovalRequests does.
func sortedNewestFirst(rs []storage.ApprovalRequest) []storage.ApprovalRequest {
	out := append([]storage.ApprovalRequest(nil), rs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0; j-- {
			prev := storage.ApprovalCursor{CreatedAt: out[j-1].CreatedAt, ID: out[j-1].ID}
			if prev.After(out[j]) {
				break
			}
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

func assertApprovalRequest(t *testing.T, want, got storage.ApprovalRequest) {
	t.Helper()
	assert.Equal(t, want.ID, got.ID)
	assert.Equal(t, want.Principal, got.Principal)
	assert.Equal(t, want.QuoteID, got.QuoteID)
	assert.Equal(t, want.ToolID, got.ToolID)
	assert.Equal(t, want.ToolSlug, got.ToolSlug)
	assert.Equal(t, want.ManifestDigest, got.ManifestDigest)
	assertDecimal(t, want.PriceUSD.String(), got.PriceUSD, "PriceUSD")
	assertDecimal(t, want.FeeUSD.String(), got.FeeUSD, "FeeUSD")
	assertDecimal(t, want.TotalUSD.String(), got.TotalUSD, "TotalUSD")
	assert.Equal(t, string(want.Input), string(got.Input))
	assert.Equal(t, want.InputSHA256, got.InputSHA256)
	assert.Equal(t, want.Status, got.Status)
	assert.Equal(t, want.DecidedBy, got.DecidedBy)
	assertTime(t, want.DecidedAt, got.DecidedAt, "DecidedAt")
	assert.Equal(t, want.Remember, got.Remember)
	assert.Equal(t, want.ExecutionID, got.ExecutionID)
	assertTime(t, want.CreatedAt, got.CreatedAt, "CreatedAt")
	assertTime(t, want.ExpiresAt, got.ExpiresAt, "ExpiresAt")
	if len(want.Approvers) == 0 {
		assert.Nil(t, got.Approvers, "Approvers: none reads back as nil")
	} else {
		assert.Equal(t, want.Approvers, got.Approvers)
	}
	if len(want.Budgets) == 0 {
		assert.Nil(t, got.Budgets, "Budgets: none reads back as nil")
	} else {
		assert.Equal(t, want.Budgets, got.Budgets)
	}
}
