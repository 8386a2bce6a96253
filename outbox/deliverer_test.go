package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/outbox"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
)

var t0 = time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)

// senderFunc adapts a function to outbox.Sender.
type senderFunc func(ctx context.Context, e storage.Event) error

func (f senderFunc) Send(ctx context.Context, e storage.Event) error { return f(ctx, e) }

func addEvents(t *testing.T, s storage.Store, n int) {
	t.Helper()
	for i := range n {
		_, err := s.AddEvent(t.Context(), storage.NewEvent{ID: fmt.Sprintf("ev-%02d", i), Type: "approval_request.created",
			Payload: []byte(`{"type":"approval_request.created","data":{}}`), CreatedAt: t0})
		require.NoError(t, err)
	}
}

func only(t *testing.T, s storage.Store) storage.Event {
	t.Helper()
	got, err := s.ListEvents(t.Context(), storage.EventFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, got, 1)
	return got[0]
}

func TestSendsAtMostParallelAtOnce(t *testing.T) {
	t.Parallel()
	s := memory.New()
	addEvents(t, s, 7)
	var inFlight, most atomic.Int64
	d := outbox.New(s, senderFunc(func(ctx context.Context, e storage.Event) error {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		inFlight.Add(-1)
		return nil
	}), &outbox.Config{Parallel: 3, Now: func() time.Time { return t0 }})
	total := 0
	for total < 7 {
		n, err := d.DeliverDue(t.Context())
		require.NoError(t, err)
		require.LessOrEqual(t, n, 3)
		total += n
	}
	assert.Equal(t, int64(3), most.Load(), "three at once, never more")
	st, err := s.EventStats(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(7), st.Delivered["approval_request.created"])
}

func TestARefusalForGoodFailsAtOnce(t *testing.T) {
	t.Parallel()
	s := memory.New()
	addEvents(t, s, 1)
	d := outbox.New(s, senderFunc(func(context.Context, storage.Event) error {
		return outbox.Permanent(errors.New("410 Gone"))
	}), &outbox.Config{Now: func() time.Time { return t0 }})
	_, err := d.DeliverDue(t.Context())
	require.NoError(t, err)
	e := only(t, s)
	assert.Equal(t, storage.EventFailed, e.Status)
	assert.Equal(t, "410 Gone", e.LastError)
}

func TestRetryAfterIsHonouredUpToTheLongestWait(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		asked, want time.Duration
	}{
		{time.Minute, time.Minute},          // longer than the 2 s backoff
		{time.Hour, outbox.MaxBackoff},      // capped
		{time.Millisecond, 2 * time.Second}, // shorter than the backoff
	} {
		s := memory.New()
		addEvents(t, s, 1)
		d := outbox.New(s, senderFunc(func(context.Context, storage.Event) error {
			return outbox.RetryAfter(errors.New("429 Too Many Requests"), c.asked)
		}), &outbox.Config{Now: func() time.Time { return t0 }, Backoff: func(int) time.Duration { return 2 * time.Second }})
		_, err := d.DeliverDue(t.Context())
		require.NoError(t, err)
		e := only(t, s)
		assert.Equal(t, storage.EventPending, e.Status)
		assert.Equal(t, c.want, e.NextAttemptAt.Sub(t0), "asked %s", c.asked)
	}
}

func TestDefaultBackoffDoublesWithJitterToFiveMinutes(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 40; n++ {
		full := outbox.MaxBackoff
		if n < 9 {
			full = 2 * time.Second << (n - 1)
		}
		got := outbox.DefaultBackoff(n)
		assert.LessOrEqual(t, got, full, "attempt %d", n)
		assert.GreaterOrEqual(t, got, full-full/4, "attempt %d", n)
	}
	assert.LessOrEqual(t, outbox.DefaultBackoff(1), 5*time.Second, "the first retry within 5 s")
}

func TestStartedDelivererSendsWhatIsWrittenAndCloseWaits(t *testing.T) {
	t.Parallel()
	s := memory.New()
	var mu sync.Mutex
	got := map[string]int{}
	d := outbox.New(s, senderFunc(func(_ context.Context, e storage.Event) error {
		mu.Lock()
		defer mu.Unlock()
		got[e.ID]++
		return nil
	}), &outbox.Config{Poll: time.Hour, Now: func() time.Time { return t0 }})
	d.Start()
	addEvents(t, s, 20)
	d.Wake()
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 20
	}, 10*time.Second, 2*time.Millisecond, "woken, it drains a backlog larger than one pass")
	d.Close(t.Context())
	d.Close(t.Context()) // twice is fine
	for id, n := range got {
		assert.Equal(t, 1, n, id)
	}
}

// Close with an attempt in flight past its deadline cuts the attempt
// short and records nothing: the event stays leased, and the next claim
// after its lease sends it again. Nothing is lost by a stop.
func TestCloseCutsAnAttemptShortWithoutLosingTheEvent(t *testing.T) {
	t.Parallel()
	s := memory.New()
	addEvents(t, s, 1)
	started := make(chan struct{})
	d := outbox.New(s, senderFunc(func(ctx context.Context, e storage.Event) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}), &outbox.Config{Now: func() time.Time { return t0 }, Lease: time.Minute})
	d.Start()
	d.Wake()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	d.Close(ctx)
	e := only(t, s)
	assert.Equal(t, storage.EventPending, e.Status)
	assert.Equal(t, 1, e.Attempts)
	assert.Empty(t, e.LastError, "a stop says nothing of the receiver")

	next := outbox.New(s, senderFunc(func(context.Context, storage.Event) error { return nil }),
		&outbox.Config{Now: func() time.Time { return t0.Add(time.Minute) }})
	n, err := next.DeliverDue(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the lease lapsed: another deliverer sends it")
	assert.Equal(t, storage.EventDelivered, only(t, s).Status)
}

// A receiver that never answers 2xx: the deliverer tries at the backoff's
// times, the last attempt at the end of the retry period, and then fails
// the event for good, kept and counted.
func TestRetriedForItsPeriodThenFailed(t *testing.T) {
	t.Parallel()
	s := memory.New()
	addEvents(t, s, 1)
	now := t0
	var sends []time.Time
	d := outbox.New(s, senderFunc(func(context.Context, storage.Event) error {
		sends = append(sends, now)
		return errors.New("503 Service Unavailable")
	}), &outbox.Config{Now: func() time.Time { return now }, RetryFor: time.Hour})
	for range 100 {
		if _, err := d.DeliverDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		e := only(t, s)
		if e.Status == storage.EventFailed {
			break
		}
		now = e.NextAttemptAt
	}
	e := only(t, s)
	require.Equal(t, storage.EventFailed, e.Status)
	assert.Equal(t, t0.Add(time.Hour), e.FinishedAt, "the last attempt at the period's end")
	assert.Equal(t, len(sends), e.Attempts)
	require.Greater(t, len(sends), 10)
	for i := 1; i < len(sends); i++ {
		wait := sends[i].Sub(sends[i-1])
		assert.Greater(t, wait, time.Duration(0))
		assert.LessOrEqual(t, wait, outbox.MaxBackoff, "attempt %d", i)
	}
	assert.LessOrEqual(t, sends[1].Sub(sends[0]), 2*time.Second, "the first retry within seconds")
	st, err := s.EventStats(t.Context())
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"approval_request.created": 1}, st.Failed)
}
