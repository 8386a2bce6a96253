package storagetest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// alertsOf returns the store's storage.AlertLedger, or skips the test.
func alertsOf(t *testing.T, s storage.Store) storage.AlertLedger {
	t.Helper()
	al, ok := s.(storage.AlertLedger)
	if !ok {
		t.Skip("the store keeps no alert ledger (storage.AlertLedger)")
	}
	return al
}

// alertID is an id of the shape the gateway claims: one per budget,
// window, fraction and period.
func alertID(budget string, fraction float64) string {
	return fmt.Sprintf("budget.threshold/%s/daily/%g/%s", budget, fraction, today)
}

func testAlerts(t *testing.T, newStore newStoreFunc) {
	t.Run("ClaimedOnce", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		al := alertsOf(t, h.s)
		claim := func(id string, at time.Time) bool {
			t.Helper()
			ok, err := al.ClaimAlert(h.ctx, id, at)
			require.NoError(t, err)
			return ok
		}
		longest := strings.Repeat("x", storage.MaxAlertIDLength)
		assert.True(t, claim(alertID("team", 0.5), t0), "the first claim")
		assert.False(t, claim(alertID("team", 0.5), t0), "the same id again")
		assert.False(t, claim(alertID("team", 0.5), t0.Add(time.Hour)), "the same id later")
		assert.True(t, claim(alertID("team", 0.8), t0), "another fraction")
		assert.True(t, claim(alertID("org", 0.5), t0), "another budget")
		assert.True(t, claim(strings.ToUpper(alertID("team", 0.5)), t0), "ids differ by case")
		assert.True(t, claim(longest, t0), "an id of the longest length")
		assert.False(t, claim(longest, t0), "the longest id again")
		assert.True(t, claim(longest[1:], t0), "an id one byte shorter is another")
	})

	t.Run("ConcurrentClaimsHaveOneWinnerEach", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		al := alertsOf(t, h.s)
		const racers = 50
		ids := []string{alertID("team", 0.5), alertID("team", 0.8), alertID("org", 1)}
		var wins [3]atomic.Int64
		errs := make([]error, racers)
		race(racers, func(i int) {
			ok, err := al.ClaimAlert(h.ctx, ids[i%len(ids)], t0.Add(time.Duration(i)*time.Millisecond))
			errs[i] = err
			if ok {
				wins[i%len(ids)].Add(1)
			}
		})
		for i, err := range errs {
			require.NoError(t, err, "racer %d", i)
		}
		for i := range ids {
			assert.Equal(t, int64(1), wins[i].Load(), "winners of %s", ids[i])
		}
	})

	t.Run("PruneKeepsTheCurrentPeriodsClaims", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		al := alertsOf(t, h.s)
		ok, err := al.ClaimAlert(h.ctx, alertID("team", 0.5), t0)
		require.NoError(t, err)
		require.True(t, ok)

		monthStart := time.Date(t0.Year(), t0.Month(), 1, 0, 0, 0, 0, time.UTC)
		_, err = h.s.Prune(h.ctx, storage.Prune{LedgerBefore: monthStart, Limit: pruneAll})
		require.NoError(t, err)
		ok, err = al.ClaimAlert(h.ctx, alertID("team", 0.5), t0.Add(time.Minute))
		require.NoError(t, err)
		assert.False(t, ok, "a claim this month outlives a prune of last month")
	})
}
