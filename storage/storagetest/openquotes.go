package storagetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// testOpenQuotes holds CreateQuoteCapped to its cap: a principal holding
// max quotes neither used nor expired gets no other, those kept alive by
// an approval request count, used and expired ones do not, and quotes
// created at once never exceed it. Each is checked on the method and on
// a quote stored by ReadBatch, the way the gateway stores it.
func testOpenQuotes(t *testing.T, newStore newStoreFunc) {
	ways := []struct {
		name   string
		create func(h *harness, q storage.Quote, max int) error
	}{
		{"CreateQuoteCapped", func(h *harness, q storage.Quote, max int) error {
			return h.s.CreateQuoteCapped(h.ctx, q, max)
		}},
		{"ReadBatch", func(h *harness, q storage.Quote, max int) error {
			_, err := h.s.ReadBatch(h.ctx, storage.Reads{
				Principal: q.Principal, ToolID: q.ToolID, Approval: true, SpendControls: true,
				Limits:      []storage.Limit{{Measure: storage.MeasureCalls, Since: q.CreatedAt.Add(-time.Minute), Max: dec("60")}},
				CreateQuote: &q, MaxOpenQuotes: max,
			})
			return err
		}},
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			// quote creates a quote of principal at at under a cap of max.
			quote := func(h *harness, principal string, at time.Time, max int) (storage.Quote, error) {
				q := newQuote(principal, "tool-a", "0.10", at)
				return q, way.create(h, q, max)
			}
			// refused requires err to be the cap's refusal of max quotes,
			// the first of which expires at first.
			refused := func(t *testing.T, err error, max int, first time.Time) {
				t.Helper()
				require.ErrorIs(t, err, storage.ErrTooManyOpenQuotes)
				var oe *storage.OpenQuotesError
				require.ErrorAs(t, err, &oe)
				assert.Equal(t, max, oe.Max)
				assert.True(t, first.Equal(oe.FirstExpiry), "first expiry %s, want %s", oe.FirstExpiry, first)
			}

			t.Run("CapRefuses", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				var first storage.Quote
				for i := range 3 {
					q, err := quote(h, "alice", t0.Add(time.Duration(i)*time.Second), 3)
					require.NoError(t, err)
					if i == 0 {
						first = q
					}
				}
				q, err := quote(h, "alice", t0.Add(3*time.Second), 3)
				refused(t, err, 3, first.ExpiresAt)
				_, err = h.s.GetQuote(h.ctx, q.ID)
				require.ErrorIs(t, err, storage.ErrNotFound, "a refused quote is not stored")

				// The cap is the principal's own; no cap is no cap.
				_, err = quote(h, "bob", t0.Add(3*time.Second), 3)
				require.NoError(t, err)
				_, err = quote(h, "alice", t0.Add(3*time.Second), 0)
				require.NoError(t, err)
			})

			t.Run("UsedQuotesDoNotCount", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				q1, err := quote(h, "alice", t0, 2)
				require.NoError(t, err)
				q2, err := quote(h, "alice", t0, 2)
				require.NoError(t, err)
				_, err = quote(h, "alice", t0.Add(time.Second), 2)
				refused(t, err, 2, q1.ExpiresAt)

				h.begin(beginFor(q1, "k1", t0.Add(2*time.Second)))
				_, err = quote(h, "alice", t0.Add(3*time.Second), 2)
				require.NoError(t, err, "the used quote left room for one")
				_, err = quote(h, "alice", t0.Add(4*time.Second), 2)
				refused(t, err, 2, q2.ExpiresAt)
			})

			t.Run("ExpiredQuotesDoNotCount", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				q1, err := quote(h, "alice", t0, 2)
				require.NoError(t, err)
				_, err = quote(h, "alice", t0.Add(time.Minute), 2)
				require.NoError(t, err)
				_, err = quote(h, "alice", q1.ExpiresAt.Add(-time.Second), 2)
				refused(t, err, 2, q1.ExpiresAt)
				// At its expiry the first no longer counts.
				_, err = quote(h, "alice", q1.ExpiresAt, 2)
				require.NoError(t, err)
			})

			t.Run("PendingApprovalRequestKeepsItsQuoteCounted", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				held, err := quote(h, "alice", t0, 1)
				require.NoError(t, err)
				r := newApprovalRequest(held, `{"n":1}`)
				r.CreatedAt, r.ExpiresAt = t0.Add(time.Minute), t0.Add(31*time.Minute)
				require.NoError(t, h.s.CreateApprovalRequest(h.ctx, r))

				// Long past the quote's own five minutes, the pending
				// request still holds it open.
				_, err = quote(h, "alice", t0.Add(20*time.Minute), 1)
				refused(t, err, 1, r.ExpiresAt)
				_, err = quote(h, "alice", r.ExpiresAt, 1)
				require.NoError(t, err, "with the request, the quote expired")
			})

			t.Run("ConcurrentQuotesNeverExceedTheCap", func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				const max, tries = 5, 24
				var (
					wg               sync.WaitGroup
					mu               sync.Mutex
					created, refusal int
					others           []error
				)
				for range tries {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := quote(h, "alice", t0, max)
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err == nil:
							created++
						case errors.Is(err, storage.ErrTooManyOpenQuotes):
							refusal++
						default:
							others = append(others, err)
						}
					}()
				}
				wg.Wait()
				require.Empty(t, others)
				assert.Equal(t, max, created)
				assert.Equal(t, tries-max, refusal)
			})
		})
	}
}
