package sqlite

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
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
		tool     string
		amount   decimal.Decimal
		at       time.Time
		released bool
	}
	var rows []row
	for i := range 400 {
		at := now.Add(-time.Duration(rng.Int64N(int64(72 * time.Hour))))
		switch rng.IntN(8) {
		case 0:
			at = at.Truncate(time.Minute)
		case 1:
			at = at.Truncate(24 * time.Hour)
		}
		r := row{tool: fmt.Sprint("tool-", rng.IntN(3)), amount: decimal.New(rng.Int64N(100000), -4), at: at}
		q := storage.Quote{ID: uuid.New(), Principal: "alice", ToolID: r.tool, TotalUSD: r.amount, CreatedAt: at, ExpiresAt: at, State: storage.QuoteOpen}
		require.NoError(t, s.CreateQuote(ctx, q))
		b := storage.Begin{Principal: "alice", Key: fmt.Sprint(i), Fingerprint: "fp", QuoteID: q.ID, ExecutionID: uuid.New(),
			ToolID: r.tool, AmountUSD: r.amount, LeaseToken: uuid.New(), LeaseUntil: at.Add(time.Minute), Now: at}
		_, err := s.BeginExecution(ctx, b)
		require.NoError(t, err)
		f := storage.Finish{Principal: "alice", Key: b.Key, ExecutionID: b.ExecutionID, LeaseToken: b.LeaseToken, Now: at}
		switch rng.IntN(3) {
		case 0: // left running: reserved
			rows = append(rows, r)
			continue
		case 1:
			f.Status, f.Charged = storage.ExecutionCompleted, true
		case 2:
			f.Status, r.released = storage.ExecutionFailed, true
		}
		require.NoError(t, s.FinishExecution(ctx, f))
		rows = append(rows, r)
	}
	// Someone else's history never counts.
	require.NoError(t, s.CreateQuote(ctx, storage.Quote{ID: uuid.New(), Principal: "bob", TotalUSD: decimal.NewFromInt(5), State: storage.QuoteOpen}))

	for n := range 500 {
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
			if r.at.Before(l.Since) || l.ToolID != "" && r.tool != l.ToolID || l.Measure == storage.MeasureSpend && r.released {
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
		got, err := measure(readQuerier{s, ctx}, "alice", l)
		require.NoError(t, err)
		require.Truef(t, want.Equal(got), "%+v (window %+v): got %s, want %s", l, windowOf(l.Since), got, want)
		first, err := oldest(readQuerier{s, ctx}, "alice", l)
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
