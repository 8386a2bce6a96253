package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// testQuoteLife holds CreateApprovalRequest to its promise about the
// quote: it lives as long as the request, with nothing else of it changed,
// only for a quote of the request's principal that is open and live, and
// atomically with the request.
func testQuoteLife(t *testing.T, newStore newStoreFunc) {
	// asked is a pending request of q made a minute after it, living half
	// an hour: far past the quote's own five minutes.
	asked := func(q storage.Quote) storage.ApprovalRequest {
		r := newApprovalRequest(q, `{"n":1}`)
		r.CreatedAt = q.CreatedAt.Add(time.Minute)
		r.ExpiresAt = r.CreatedAt.Add(30 * time.Minute)
		return r
	}

	t.Run("ExtendsTheQuote", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		r := asked(q)
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, r))

		want := q
		want.ExpiresAt = r.ExpiresAt
		got, err := h.s.GetQuote(h.ctx, q.ID)
		require.NoError(t, err)
		assertQuote(t, want, got)
		assertApprovalRequest(t, r, h.stored(r.ID))

		// However its reads are made: a store that remembers the quote it
		// created remembers it as it is now. (The call is refused, so that
		// the quote serves the grant below.)
		refused := errors.New("refused")
		var decided []storage.ReadResult
		_, err = h.s.AdmitCall(h.ctx, storage.Reads{Principal: "alice", QuoteID: q.ID, ToolID: "tool-a", SpendControls: true},
			func(r storage.ReadResult) (storage.Begin, error) {
				decided = append(decided, r)
				return storage.Begin{}, refused
			})
		require.ErrorIs(t, err, refused)
		require.NotEmpty(t, decided)
		for _, read := range decided {
			require.NotNil(t, read.Quote)
			assertQuote(t, want, *read.Quote)
		}

		// A prune of what expired before the quote's own expiry leaves it.
		_, err = h.s.Prune(h.ctx, storage.Prune{QuotesBefore: q.ExpiresAt.Add(10 * time.Minute), Limit: pruneAll})
		require.NoError(t, err)
		got, err = h.s.GetQuote(h.ctx, q.ID)
		require.NoError(t, err)
		assertQuote(t, want, got)

		// Twenty minutes on, the request's grant admits one call on the
		// quote, and the quote serves no other.
		at := t0.Add(20 * time.Minute)
		h.decide(r.ID, true, "", at)
		b := beginFor(q, "k1", at)
		b.GrantID = r.ID
		h.begin(b)
		_, err = h.s.BeginExecution(h.ctx, beginFor(q, "k2", at))
		assert.ErrorIs(t, err, storage.ErrQuoteUsed)
		got, err = h.s.GetQuote(h.ctx, q.ID)
		require.NoError(t, err)
		assert.Equal(t, storage.QuoteUsed, got.State)
		assert.Equal(t, "k1", got.UsedByKey)
		assertTime(t, r.ExpiresAt, got.ExpiresAt, "the quote's life")
	})

	t.Run("NeverShortensTheQuote", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		r := asked(q)
		r.ExpiresAt = q.ExpiresAt.Add(-time.Minute)
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, r))
		got, err := h.s.GetQuote(h.ctx, q.ID)
		require.NoError(t, err)
		assertQuote(t, q, got)

		// A second request of the same quote, for another input, extends it
		// further.
		second := newApprovalRequest(q, `{"n":2}`)
		second.CreatedAt = q.CreatedAt.Add(time.Minute)
		second.ExpiresAt = q.ExpiresAt.Add(time.Hour)
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, second))
		got, err = h.s.GetQuote(h.ctx, q.ID)
		require.NoError(t, err)
		assertTime(t, second.ExpiresAt, got.ExpiresAt)
	})

	t.Run("Refusals", func(t *testing.T) {
		cases := []struct {
			name string
			// change makes the request, or the quote, one that must be refused.
			change func(h *harness, q storage.Quote, r *storage.ApprovalRequest)
			want   error
		}{
			{"NoSuchQuote", func(_ *harness, _ storage.Quote, r *storage.ApprovalRequest) { r.QuoteID = uuid.New() }, storage.ErrQuoteNotFound},
			{"AnotherPrincipalsQuote", func(_ *harness, _ storage.Quote, r *storage.ApprovalRequest) { r.Principal = "mallory" }, storage.ErrQuoteNotFound},
			{"UsedQuote", func(h *harness, q storage.Quote, _ *storage.ApprovalRequest) { h.begin(beginFor(q, "k1", t0)) }, storage.ErrQuoteUsed},
			{"AtTheQuotesExpiry", func(_ *harness, q storage.Quote, r *storage.ApprovalRequest) { r.CreatedAt = q.ExpiresAt }, storage.ErrQuoteExpired},
			{"AfterTheQuotesExpiry", func(_ *harness, q storage.Quote, r *storage.ApprovalRequest) {
				r.CreatedAt = q.ExpiresAt.Add(time.Hour)
				r.ExpiresAt = r.CreatedAt.Add(30 * time.Minute)
			}, storage.ErrQuoteExpired},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				q := h.quote("alice", "tool-a", "0.11", t0)
				r := asked(q)
				c.change(h, q, &r)
				before, err := h.s.GetQuote(h.ctx, q.ID)
				require.NoError(t, err)

				assert.ErrorIs(t, h.s.CreateApprovalRequest(h.ctx, r), c.want)
				_, err = h.s.GetApprovalRequest(h.ctx, r.ID)
				assert.ErrorIs(t, err, storage.ErrNotFound, "a refused request is not stored")
				got, err := h.s.GetQuote(h.ctx, q.ID)
				require.NoError(t, err)
				assertQuote(t, before, got)
			})
		}
	})

	t.Run("ATakenIDLeavesTheQuote", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		first := h.quote("alice", "tool-a", "0.11", t0)
		r := asked(first)
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, r))
		other := h.quote("alice", "tool-a", "0.11", t0)
		again := asked(other)
		again.ID = r.ID
		again.ExpiresAt = again.ExpiresAt.Add(time.Hour)
		assert.ErrorIs(t, h.s.CreateApprovalRequest(h.ctx, again), storage.ErrAlreadyExists)
		got, err := h.s.GetQuote(h.ctx, other.ID)
		require.NoError(t, err)
		assertQuote(t, other, got)
	})

	// Requests racing a call on one quote: each request is made before the
	// call takes the quote, and extends it, or finds it used and changes
	// nothing.
	t.Run("RacesACall", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		const n = 8
		requests := make([]storage.ApprovalRequest, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range requests {
			// Each for another input: the same request pending is asked once.
			requests[i] = newApprovalRequest(q, fmt.Sprintf(`{"n":%d}`, i))
			requests[i].CreatedAt = q.CreatedAt.Add(time.Minute)
			requests[i].ExpiresAt = requests[i].CreatedAt.Add(30*time.Minute + time.Duration(i)*time.Minute)
			wg.Go(func() {
				<-start
				errs[i] = h.s.CreateApprovalRequest(h.ctx, requests[i])
			})
		}
		wg.Go(func() {
			<-start
			_, err := h.s.BeginExecution(h.ctx, beginFor(q, "k1", t0.Add(time.Minute)))
			assert.NoError(t, err)
		})
		close(start)
		wg.Wait()

		want := q.ExpiresAt
		for i, err := range errs {
			switch {
			case err == nil:
				h.stored(requests[i].ID)
				if requests[i].ExpiresAt.After(want) {
					want = requests[i].ExpiresAt
				}
			case errors.Is(err, storage.ErrQuoteUsed):
				_, err := h.s.GetApprovalRequest(h.ctx, requests[i].ID)
				assert.ErrorIs(t, err, storage.ErrNotFound)
			default:
				t.Errorf("request %d: %v", i, err)
			}
		}
		got, err := h.s.GetQuote(h.ctx, q.ID)
		require.NoError(t, err)
		assert.Equal(t, storage.QuoteUsed, got.State)
		assertTime(t, want, got.ExpiresAt, "the quote lives as long as the longest request made before the call")
	})
}
