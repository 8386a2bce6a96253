package storagetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// TestSeal is a Seal for tests of a store's receipts: the receipt it
// makes says which execution, seq and prev it was sealed with, so a test
// can check what the store passed and kept; reads of the execution give
// its response with that receipt joined in (storage.WithReceipt). resp,
// the response finished with, plays no part in the receipt. calls, when
// not nil, counts how many times the store called it.
func TestSeal(id uuid.UUID, _ string, calls *atomic.Int64) storage.Seal {
	return func(seq int64, prev string) (storage.Sealed, error) {
		if calls != nil {
			calls.Add(1)
		}
		r := fmt.Sprintf(`{"execution":%q,"prev":%q,"seq":%d}`, id, prev, seq)
		sum := sha256.Sum256([]byte(r))
		return storage.Sealed{
			Receipt: []byte(r),
			Hash:    "sha256:" + hex.EncodeToString(sum[:]),
		}, nil
	}
}

func testSeal(id uuid.UUID, resp string) storage.Seal { return TestSeal(id, resp, nil) }

// sealedFinish is finishFor with a receipt.
func sealedFinish(b storage.Begin, status storage.ExecutionStatus, at time.Time) storage.Finish {
	f := finishFor(b, status, `{"status":"`+string(status)+`"}`, at)
	f.Seal = testSeal(b.ExecutionID, string(f.Response))
	return f
}

// receiptsOf reads a principal's whole chain, page by page.
func (h *harness) receiptsOf(principal string, page int) []storage.Receipt {
	h.t.Helper()
	var all []storage.Receipt
	after := int64(0)
	for {
		got, err := h.s.ListReceipts(h.ctx, principal, after, page)
		require.NoError(h.t, err)
		if len(got) == 0 {
			return all
		}
		require.LessOrEqual(h.t, len(got), page)
		all = append(all, got...)
		after = got[len(got)-1].Seq
	}
}

// AssertChain requires receipts to be principal's seqs 1..n, each sealed
// by TestSeal on the hash of the one before.
func AssertChain(t testing.TB, principal string, receipts []storage.Receipt) {
	t.Helper()
	prev := ""
	for i, r := range receipts {
		seq := int64(i + 1)
		require.Equal(t, seq, r.Seq, "seqs are gapless from 1")
		require.Equal(t, principal, r.Principal)
		require.Equal(t, fmt.Sprintf(`{"execution":%q,"prev":%q,"seq":%d}`, r.ExecutionID, prev, seq), string(r.Signed),
			"receipt %d was sealed on the one before it", seq)
		sum := sha256.Sum256(r.Signed)
		require.Equal(t, "sha256:"+hex.EncodeToString(sum[:]), r.Hash)
		prev = r.Hash
	}
}

// Chain reads principal's whole chain from s, page by page, and requires
// it to be what AssertChain says.
func Chain(t testing.TB, s storage.Store, principal string) []storage.Receipt {
	t.Helper()
	var all []storage.Receipt
	for after := int64(0); ; {
		page, err := s.ListReceipts(context.Background(), principal, after, 64)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	AssertChain(t, principal, all)
	return all
}

func assertChain(t *testing.T, principal string, receipts []storage.Receipt) {
	t.Helper()
	AssertChain(t, principal, receipts)
}

func testReceipts(t *testing.T, newStore newStoreFunc) {
	t.Run("EveryFinishExtendsItsPrincipalsChain", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		var mine []uuid.UUID
		for i, status := range []storage.ExecutionStatus{storage.ExecutionCompleted, storage.ExecutionFailed, storage.ExecutionAmbiguous, storage.ExecutionCompleted} {
			b := h.admit("alice", "tool-a", "0.11", "key-"+strconv.Itoa(i), t0)
			other := h.admit("bob", "tool-a", "0.11", "key-"+strconv.Itoa(i), t0)
			require.NoError(t, h.s.FinishExecution(h.ctx, sealedFinish(b, status, t0.Add(time.Second))))
			require.NoError(t, h.s.FinishExecution(h.ctx, sealedFinish(other, status, t0.Add(time.Second))))
			mine = append(mine, b.ExecutionID)
		}
		alice := h.receiptsOf("alice", 3)
		require.Len(t, alice, 4)
		assertChain(t, "alice", alice)
		for i, r := range alice {
			assert.Equal(t, mine[i], r.ExecutionID)

			// What a read of the execution or its key gives is its
			// response with its receipt as the last member.
			e, err := h.s.GetExecution(h.ctx, r.ExecutionID)
			require.NoError(t, err)
			want := `{"status":"` + string(e.Status) + `","receipt":` + string(r.Signed) + `}`
			assert.Equal(t, want, string(e.Response))
			rec, err := h.s.GetIdempotency(h.ctx, "alice", e.IdempotencyKey)
			require.NoError(t, err)
			assert.Equal(t, want, string(rec.Response))
		}
		assertChain(t, "bob", h.receiptsOf("bob", 1000))

		got, err := h.s.ListReceipts(h.ctx, "alice", 4, 10)
		require.NoError(t, err)
		assert.Empty(t, got, "nothing after the last")
		got, err = h.s.ListReceipts(h.ctx, "carol", 0, 10)
		require.NoError(t, err)
		assert.Empty(t, got, "a principal with no calls has no receipts")
	})

	t.Run("AResolutionHasItsOwnReceipt", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.admit("alice", "tool-a", "0.11", "key-1", t0)
		require.NoError(t, h.s.FinishExecution(h.ctx, sealedFinish(b, storage.ExecutionAmbiguous, t0.Add(time.Second))))
		r := resolveFor(b.ExecutionID, storage.ExecutionCompleted, "approver", t0.Add(time.Hour))
		r.Seal = testSeal(b.ExecutionID, "resolved")
		e := h.resolve(r)
		chain := h.receiptsOf("alice", 10)
		require.Len(t, chain, 2)
		assertChain(t, "alice", chain)
		assert.Equal(t, b.ExecutionID, chain[1].ExecutionID)

		// The resolved response carries the resolution's receipt, not the
		// finish's, wherever it is read.
		want := string(r.Response[:len(r.Response)-1]) + `,"receipt":` + string(chain[1].Signed) + `}`
		assert.Equal(t, want, string(e.Response))
		got, err := h.s.GetExecution(h.ctx, b.ExecutionID)
		require.NoError(t, err)
		assert.Equal(t, want, string(got.Response))
		rec, err := h.s.GetIdempotency(h.ctx, "alice", b.Key)
		require.NoError(t, err)
		assert.Equal(t, want, string(rec.Response))

		// A second resolution is refused and seals nothing.
		r.Outcome = storage.ExecutionFailed
		_, err = h.s.ResolveExecution(h.ctx, r)
		require.ErrorIs(t, err, storage.ErrAlreadyResolved)
		assert.Len(t, h.receiptsOf("alice", 10), 2)
	})

	t.Run("NothingIsKeptOfAFinishThatFails", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		b := h.admit("alice", "tool-a", "0.11", "key-1", t0)

		// A lost lease: the receipt is not kept.
		lost := sealedFinish(b, storage.ExecutionCompleted, t0)
		lost.LeaseToken = uuid.New()
		require.ErrorIs(t, h.s.FinishExecution(h.ctx, lost), storage.ErrLeaseLost)
		assert.Empty(t, h.receiptsOf("alice", 10))

		// A Seal that fails: the execution is not finished either.
		failing := finishFor(b, storage.ExecutionCompleted, `{}`, t0)
		failing.Seal = func(int64, string) (storage.Sealed, error) { return storage.Sealed{}, errors.New("no key") }
		require.Error(t, h.s.FinishExecution(h.ctx, failing))
		e, err := h.s.GetExecution(h.ctx, b.ExecutionID)
		require.NoError(t, err)
		assert.Equal(t, storage.ExecutionRunning, e.Status, "a finish without its receipt writes nothing")
		assert.Empty(t, h.receiptsOf("alice", 10))

		// The run can still finish, and its receipt is the first.
		require.NoError(t, h.s.FinishExecution(h.ctx, sealedFinish(b, storage.ExecutionCompleted, t0)))
		assertChain(t, "alice", h.receiptsOf("alice", 10))
		assert.Len(t, h.receiptsOf("alice", 10), 1)
	})

	t.Run("ConcurrentFinishesOfOnePrincipalStayGapless", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		const n = 60
		begins := make([]storage.Begin, n)
		for i := range begins {
			begins[i] = h.admit("alice", "tool-a", "0.01", "key-"+strconv.Itoa(i), t0)
		}
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, b := range begins {
			wg.Go(func() {
				errs <- h.s.FinishExecution(h.ctx, sealedFinish(b, storage.ExecutionCompleted, t0.Add(time.Second)))
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		chain := h.receiptsOf("alice", 7)
		require.Len(t, chain, n)
		assertChain(t, "alice", chain)
		// Each execution has exactly one receipt, and its response is read
		// with that one.
		seen := map[uuid.UUID]bool{}
		for _, r := range chain {
			require.False(t, seen[r.ExecutionID], "one receipt per finished execution")
			seen[r.ExecutionID] = true
			e, err := h.s.GetExecution(h.ctx, r.ExecutionID)
			require.NoError(t, err)
			assert.Equal(t, `{"status":"completed","receipt":`+string(r.Signed)+`}`, string(e.Response))
		}
	})
}
