package storagetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

func testSessions(t *testing.T, newStore newStoreFunc) {
	t.Run("CreateGetDelete", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		ss := h.s
		want := storage.Session{ID: hexID("one"), Approver: "pat", CSRF: "csrf-1", CreatedAt: t0, ExpiresAt: t0.Add(15 * time.Minute)}
		require.NoError(t, ss.CreateSession(h.ctx, want))
		got, err := ss.GetSession(h.ctx, want.ID, t0.Add(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, want, got)

		other := want
		other.Approver = "sam"
		assert.ErrorIs(t, ss.CreateSession(h.ctx, other), storage.ErrAlreadyExists, "an id names one session")

		_, err = ss.GetSession(h.ctx, hexID("unknown"), t0)
		assert.ErrorIs(t, err, storage.ErrNotFound)

		require.NoError(t, ss.DeleteSession(h.ctx, want.ID))
		_, err = ss.GetSession(h.ctx, want.ID, t0.Add(time.Minute))
		assert.ErrorIs(t, err, storage.ErrNotFound, "a deleted session is signed out")
		assert.NoError(t, ss.DeleteSession(h.ctx, want.ID), "deleting it again is no error")
	})

	t.Run("ExpiredIsNotFound", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		ss := h.s
		s := storage.Session{ID: hexID("short"), Approver: "pat", CSRF: "c", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
		require.NoError(t, ss.CreateSession(h.ctx, s))
		_, err := ss.GetSession(h.ctx, s.ID, t0.Add(time.Minute-time.Second))
		require.NoError(t, err)
		_, err = ss.GetSession(h.ctx, s.ID, t0.Add(time.Minute))
		assert.ErrorIs(t, err, storage.ErrNotFound, "a session ends at its ExpiresAt")

		// A later sign-in may forget it; it must not forget a live one.
		live := storage.Session{ID: hexID("live"), Approver: "sam", CSRF: "c", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		require.NoError(t, ss.CreateSession(h.ctx, live))
		later := storage.Session{ID: hexID("later"), Approver: "pat", CSRF: "c", CreatedAt: t0.Add(2 * time.Minute), ExpiresAt: t0.Add(time.Hour)}
		require.NoError(t, ss.CreateSession(h.ctx, later))
		_, err = ss.GetSession(h.ctx, live.ID, t0.Add(3*time.Minute))
		assert.NoError(t, err)
	})

	t.Run("ConcurrentSignInsAndOuts", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		ss := h.s
		const n = 20
		errs := make([]error, n)
		race(n, func(i int) {
			s := storage.Session{ID: hexID(fmt.Sprint(i)), Approver: "pat", CSRF: "c", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
			if errs[i] = ss.CreateSession(h.ctx, s); errs[i] == nil && i%2 == 0 {
				errs[i] = ss.DeleteSession(h.ctx, s.ID)
			}
		})
		for i := range n {
			require.NoError(t, errs[i], "racer %d", i)
			_, err := ss.GetSession(h.ctx, hexID(fmt.Sprint(i)), t0)
			if i%2 == 0 {
				assert.ErrorIs(t, err, storage.ErrNotFound, "racer %d signed out", i)
			} else {
				assert.NoError(t, err, "racer %d is signed in", i)
			}
		}
	})
}

// hexID is a session id: the hex SHA-256 of some token.
func hexID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func testWindows(t *testing.T, newStore newStoreFunc) {
	t.Run("CountsUntilTheWindowEnds", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		wc := h.s
		count := func(at time.Time, keys ...string) []storage.Window {
			t.Helper()
			got, err := wc.CountEvent(h.ctx, storage.WindowEvent{Keys: keys, Window: time.Minute, Now: at})
			require.NoError(t, err)
			require.Len(t, got, len(keys))
			return got
		}
		assert.Equal(t, []storage.Window{{Count: 1, Start: t0, End: t0.Add(time.Minute)}}, count(t0, "addr/a"))
		got := count(t0.Add(10*time.Second), "addr/a", "prefix/p")
		assert.Equal(t, storage.Window{Count: 2, Start: t0, End: t0.Add(time.Minute)}, got[0], "the window goes on")
		assert.Equal(t, storage.Window{Count: 1, Start: t0.Add(10 * time.Second), End: t0.Add(70 * time.Second)}, got[1], "each key has its own")

		read, err := wc.Windows(h.ctx, []string{"prefix/p", "none", "addr/a"}, t0.Add(59*time.Second))
		require.NoError(t, err)
		assert.Equal(t, []storage.Window{
			{Count: 1, Start: t0.Add(10 * time.Second), End: t0.Add(70 * time.Second)},
			{},
			{Count: 2, Start: t0, End: t0.Add(time.Minute)},
		}, read, "in the order asked, the zero Window for a key with none")

		read, err = wc.Windows(h.ctx, []string{"addr/a", "prefix/p"}, t0.Add(time.Minute))
		require.NoError(t, err)
		assert.Equal(t, storage.Window{}, read[0], "a window ends at its End")
		assert.Equal(t, int64(1), read[1].Count)

		assert.Equal(t, []storage.Window{{Count: 1, Start: t0.Add(time.Minute), End: t0.Add(2 * time.Minute)}},
			count(t0.Add(time.Minute), "addr/a"), "the next event begins a new window")
	})

	t.Run("ConcurrentEventsAllCount", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		wc := h.s
		const n = 30
		errs := make([]error, n)
		race(n, func(i int) {
			keys := []string{"addr/shared", "prefix/shared"}
			if i%2 == 1 {
				keys = []string{"prefix/shared", "addr/shared"} // another order: no deadlock
			}
			_, errs[i] = wc.CountEvent(h.ctx, storage.WindowEvent{Keys: keys, Window: time.Minute, Now: t0.Add(time.Duration(i) * time.Millisecond)})
		})
		for i, err := range errs {
			require.NoError(t, err, "racer %d", i)
		}
		got, err := wc.Windows(h.ctx, []string{"addr/shared", "prefix/shared"}, t0.Add(time.Second))
		require.NoError(t, err)
		assert.Equal(t, int64(n), got[0].Count)
		assert.Equal(t, int64(n), got[1].Count)
	})
}

func testSecrets(t *testing.T, newStore newStoreFunc) {
	t.Run("FirstCandidateIsKept", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		ss := h.s
		first := bytes.Repeat([]byte{1}, 32)
		got, err := ss.Secret(h.ctx, "sealing", first)
		require.NoError(t, err)
		assert.Equal(t, first, got)
		got, err = ss.Secret(h.ctx, "sealing", bytes.Repeat([]byte{2}, 32))
		require.NoError(t, err)
		assert.Equal(t, first, got, "a secret, once kept, never changes")
		got, err = ss.Secret(h.ctx, "other", []byte{3})
		require.NoError(t, err)
		assert.Equal(t, []byte{3}, got, "names are apart")
	})

	t.Run("ConcurrentFirstCallsAgree", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		ss := h.s
		const n = 20
		got := make([][]byte, n)
		errs := make([]error, n)
		race(n, func(i int) {
			got[i], errs[i] = ss.Secret(h.ctx, "sealing", bytes.Repeat([]byte{byte(i)}, 32))
		})
		for i := range n {
			require.NoError(t, errs[i], "racer %d", i)
			assert.Equal(t, got[0], got[i], "racer %d", i)
		}
	})
}

// testSameRequest checks that the same approval request, pending, is
// stored once.
func testSameRequest(t *testing.T, newStore newStoreFunc) {
	t.Run("PendingOnce", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		first := newApprovalRequest(q, `{"n":1}`)
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, first))

		again := newApprovalRequest(q, `{"n":1}`)
		again.CreatedAt = t0.Add(time.Second)
		err := h.s.CreateApprovalRequest(h.ctx, again)
		require.ErrorIs(t, err, storage.ErrApprovalRequestPending)
		var pending *storage.PendingRequestError
		require.True(t, errors.As(err, &pending))
		assertApprovalRequest(t, first, pending.Pending)
		_, err = h.s.GetApprovalRequest(h.ctx, again.ID)
		assert.ErrorIs(t, err, storage.ErrNotFound, "nothing was written")

		// Another input, another quote or another principal is another request.
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, newApprovalRequest(q, `{"n":2}`)))
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, newApprovalRequest(h.quote("alice", "tool-a", "0.11", t0), `{"n":1}`)))
		// Another principal asks of a quote of its own: a request's quote is
		// always its principal's.
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, newApprovalRequest(h.quote("bob", "tool-a", "0.11", t0), `{"n":1}`)))

		// Once decided, the same call may be asked again.
		h.decide(first.ID, false, "", t0.Add(2*time.Second))
		third := newApprovalRequest(q, `{"n":1}`)
		third.CreatedAt = t0.Add(3 * time.Second)
		require.NoError(t, h.s.CreateApprovalRequest(h.ctx, third))
	})

	t.Run("ConcurrentSameRequestsStoreOne", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		q := h.quote("alice", "tool-a", "0.11", t0)
		const n = 20
		reqs := make([]storage.ApprovalRequest, n)
		errs := make([]error, n)
		for i := range reqs {
			reqs[i] = newApprovalRequest(q, `{"n":1}`)
		}
		race(n, func(i int) { errs[i] = h.s.CreateApprovalRequest(h.ctx, reqs[i]) })
		var stored uuid.UUID
		for i, err := range errs {
			if err == nil {
				require.Equal(t, uuid.Nil, stored, "racer %d stored a second request", i)
				stored = reqs[i].ID
			}
		}
		require.NotEqual(t, uuid.Nil, stored, "one racer stores the request")
		for i, err := range errs {
			if err != nil {
				var pending *storage.PendingRequestError
				require.True(t, errors.As(err, &pending), "racer %d: %v", i, err)
				assert.Equal(t, stored, pending.Pending.ID, "racer %d is given the stored one", i)
			}
		}
		list, err := h.s.ListApprovalRequests(h.ctx, storage.ApprovalRequestFilter{Principals: []string{"alice"}, Limit: anyPage})
		require.NoError(t, err)
		assert.Len(t, list, 1)
	})
}
