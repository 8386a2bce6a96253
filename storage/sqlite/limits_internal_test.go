package sqlite

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

// TestMeasureMatchesTheLedger holds the rollup-based measure to a plain sum
// over the history it was given: random calls over three days (some
// running, some released, at any nanosecond, a few on minute and day
// boundaries) and random windows, many of them cut inside a minute, on a
// minute or at a midnight.
func TestMeasureMatchesTheLedger(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "toolgate.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	now := time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))

	type row struct {
		principal string
		tool      string
		amount    decimal.Decimal
		at        time.Time
		outcome   storage.ExecutionStatus // running (reserved), completed (charged) or failed (released)
	}
	var rows []row
	for i := range 250 {
		at := now.Add(-time.Duration(rng.Int64N(int64(72 * time.Hour))))
		switch rng.IntN(8) {
		case 0:
			at = at.Truncate(time.Minute)
		case 1:
			at = at.Truncate(24 * time.Hour)
		}
		r := row{principal: "alice", tool: fmt.Sprint("tool-", rng.IntN(3)), amount: decimal.New(rng.Int64N(100000), -4), at: at,
			outcome: []storage.ExecutionStatus{storage.ExecutionRunning, storage.ExecutionCompleted, storage.ExecutionFailed}[rng.IntN(3)]}
		if i%10 == 0 {
			r.principal = "bob" // someone else's history, which never counts
		}
		rows = append(rows, r)
	}
	// Written by several callers at once, so that the writes share commits.
	const writers = 16
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(rows); i += writers {
				r := rows[i]
				q := storage.Quote{ID: uuid.New(), Principal: r.principal, ToolID: r.tool, TotalUSD: r.amount, CreatedAt: r.at, ExpiresAt: r.at, State: storage.QuoteOpen}
				if !assert.NoError(t, s.CreateQuote(ctx, q)) {
					return
				}
				b := storage.Begin{Principal: r.principal, Key: fmt.Sprint(i), Fingerprint: "fp", QuoteID: q.ID, ExecutionID: uuid.New(),
					ToolID: r.tool, AmountUSD: r.amount, LeaseToken: uuid.New(), LeaseUntil: r.at.Add(time.Minute), Now: r.at}
				if _, err := s.BeginExecution(ctx, b); !assert.NoError(t, err) || r.outcome == storage.ExecutionRunning {
					continue
				}
				assert.NoError(t, s.FinishExecution(ctx, storage.Finish{Principal: r.principal, Key: b.Key, ExecutionID: b.ExecutionID,
					LeaseToken: b.LeaseToken, Status: r.outcome, Charged: r.outcome == storage.ExecutionCompleted, Now: r.at}))
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	assertRollupsExact(t, rawDB(t, s.Path()), "after the writes")

	for n := range 300 {
		l := storage.Limit{Measure: storage.MeasureSpend, Since: now.Add(-time.Duration(rng.Int64N(int64(80 * time.Hour))))}
		switch n % 5 {
		case 0:
			l.Since = l.Since.Truncate(time.Minute)
		case 1:
			l.Since = l.Since.Truncate(24 * time.Hour)
		case 2:
			l.Since = l.Since.Truncate(time.Second)
		}
		if n == 0 {
			l.Since = time.Time{}
		}
		if rng.IntN(2) == 0 {
			l.Measure = storage.MeasureCalls
		}
		if rng.IntN(2) == 0 {
			l.ToolID = fmt.Sprint("tool-", rng.IntN(4))
		}
		var (
			want       decimal.Decimal
			calls      int64
			wantOldest time.Time
		)
		for _, r := range rows {
			released := r.outcome == storage.ExecutionFailed
			if r.principal != "alice" || r.at.Before(l.Since) || l.ToolID != "" && r.tool != l.ToolID || l.Measure == storage.MeasureSpend && released {
				continue
			}
			want, calls = want.Add(r.amount), calls+1
			if wantOldest.IsZero() || r.at.Before(wantOldest) {
				wantOldest = r.at
			}
		}
		if l.Measure == storage.MeasureCalls {
			want = decimal.NewFromInt(calls)
		}
		got, err := measure(s.pool(ctx), "alice", l)
		require.NoError(t, err)
		require.Truef(t, want.Equal(got), "%+v (window %+v): got %s, want %s", l, windowOf(l.Since), got, want)
		first, err := oldest(s.pool(ctx), "alice", l)
		require.NoError(t, err)
		require.Truef(t, wantOldest.Equal(first), "%+v: oldest %s, want %s", l, first, wantOldest)
	}
}

// TestWindowOf checks the cuts themselves on the cases that matter.
func TestWindowOf(t *testing.T) {
	t.Parallel()
	midnight := time.Date(2030, time.March, 15, 0, 0, 0, 0, time.UTC)
	m := func(t time.Time) int64 { return t.UnixNano() / nanosPerMinute }
	d := func(t time.Time) int64 { return t.UnixNano() / nanosPerDay }
	cases := []struct {
		name  string
		since time.Time
		want  window
	}{
		{"the beginning", time.Time{}, window{day: -1 << 63}},
		{"a midnight: day rows only", midnight, window{day: d(midnight), minuteFrom: m(midnight), minuteTo: m(midnight)}},
		{"a whole minute: no raw rows", midnight.Add(-time.Hour), window{
			day: d(midnight), minuteFrom: m(midnight.Add(-time.Hour)), minuteTo: m(midnight)}},
		{"20 s into a minute: 20 s of raw rows taken away", midnight.Add(-time.Hour + 20*time.Second), window{
			day: d(midnight), minuteFrom: m(midnight.Add(-time.Hour)), minuteTo: m(midnight),
			rawSign: -1, rawFrom: midnight.Add(-time.Hour).UnixNano(), rawBefore: midnight.Add(-time.Hour + 20*time.Second).UnixNano()}},
		{"40 s into a minute: 20 s of raw rows added", midnight.Add(-time.Hour + 40*time.Second), window{
			day: d(midnight), minuteFrom: m(midnight.Add(-time.Hour)) + 1, minuteTo: m(midnight),
			rawSign: 1, rawFrom: midnight.Add(-time.Hour + 40*time.Second).UnixNano(), rawBefore: midnight.Add(-time.Hour + time.Minute).UnixNano()}},
		{"before the epoch", time.Unix(-90, 0), window{
			day: 0, minuteFrom: -1, minuteTo: 0,
			rawSign: 1, rawFrom: -90 * int64(time.Second), rawBefore: -60 * int64(time.Second)}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, windowOf(tc.since), tc.name)
	}
}
