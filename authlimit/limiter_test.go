package authlimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// recorder is a WindowCounter that remembers every key it was given.
type recorder struct {
	storage.WindowCounter
	mu   sync.Mutex
	keys []string
}

func (r *recorder) CountEvent(ctx context.Context, e storage.WindowEvent) ([]storage.Window, error) {
	r.mu.Lock()
	r.keys = append(r.keys, e.Keys...)
	r.mu.Unlock()
	return r.WindowCounter.CountEvent(ctx, e)
}

func from(addr string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/approvals", nil)
	r.RemoteAddr = addr
	return r
}

// waitOf is how long l's Check makes the request wait: zero when it goes on.
func waitOf(ctx context.Context, l *authlimit.Limiter, r *http.Request, s authlimit.Surface, credential string, accepted bool) (time.Duration, error) {
	v, err := l.Check(ctx, r, s, credential, accepted)
	return v.Wait, err
}

const rightKey = "tg_approver_right_0123456789abcdef"

func TestTheEleventhFailureIsRefusedAndThenTheRightKeyToo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{now: time.Date(2030, 3, 15, 12, 0, 0, 0, time.UTC)}
	reg := prometheus.NewRegistry()
	l, err := authlimit.New(&authlimit.Config{Clock: clock, Metrics: reg})
	require.NoError(t, err)
	guesser := from("203.0.113.7:5000")

	for i := range 10 {
		wait, err := waitOf(ctx, l, guesser, authlimit.SurfaceApprovalPage, "guess-number-"+strings.Repeat("x", i), false)
		require.NoError(t, err)
		assert.Zero(t, wait, "failure %d is answered as a failure", i+1)
		clock.Advance(time.Second)
	}
	wait, err := waitOf(ctx, l, guesser, authlimit.SurfaceApprovalPage, "guess-number-eleven", false)
	require.NoError(t, err)
	assert.Equal(t, 50*time.Second, wait, "the 11th waits for the window, begun by the first, to end")

	wait, err = waitOf(ctx, l, guesser, authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Equal(t, 50*time.Second, wait, "the right key from that address too, on any surface")

	other, err := waitOf(ctx, l, from("198.51.100.1:5000"), authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Zero(t, other, "another address is not held back")

	clock.Advance(50 * time.Second)
	wait, err = waitOf(ctx, l, guesser, authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Zero(t, wait, "once the window has passed, the right key works")

	assert.Equal(t, 11.0, counter(t, reg, "toolgate_auth_failures_total", "approval_page"))
	assert.Equal(t, 1.0, counter(t, reg, "toolgate_auth_limited_total", "approval_page"))
	assert.Equal(t, 1.0, counter(t, reg, "toolgate_auth_limited_total", "api"))
	assert.Zero(t, counter(t, reg, "toolgate_auth_failures_total", "mcp"), "every surface's series is there from the start")
}

// counter reads a counter of reg by name and surface.
func counter(t *testing.T, reg *prometheus.Registry, name, surface string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == surface {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{surface=%q}", name, surface)
	return 0
}

// TestAKeyPrefixSlowsGuessesButNeverLocksOutTheRightKey: a prefix's
// failures from many addresses refuse later wrong keys with that prefix,
// from any address, and the right key from an address that failed; never
// the right key from an address that has not.
func TestAKeyPrefixSlowsGuessesButNeverLocksOutTheRightKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{now: time.Date(2030, 3, 15, 12, 0, 0, 0, time.UTC)}
	rec := &recorder{WindowCounter: memory.New()}
	l, err := authlimit.New(&authlimit.Config{Clock: clock, Counter: rec})
	require.NoError(t, err)
	prefix := rightKey[:authlimit.DefaultKeyPrefixLength]
	guesser := func(i int) *http.Request {
		return from(netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i + 1)}), 443).String())
	}
	for i := range 10 {
		v, err := l.Check(ctx, guesser(i), authlimit.SurfaceAPI, prefix+"wrong-guess-"+string(rune('a'+i)), false)
		require.NoError(t, err)
		assert.Zero(t, v, "guess %d is answered as a failure", i+1)
	}

	v, err := l.Check(ctx, from("192.0.2.200:1"), authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Zero(t, v, "the right key from an address that has not failed goes on")

	v, err = l.Check(ctx, from("192.0.2.201:1"), authlimit.SurfaceAPI, prefix+"wrong-guess-fresh", false)
	require.NoError(t, err)
	assert.Equal(t, authlimit.Verdict{Wait: time.Minute, KeyPrefix: true}, v, "a wrong key with that prefix is refused, from a fresh address too, for the prefix")
	v, err = l.Check(ctx, from("192.0.2.201:1"), authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Equal(t, authlimit.Verdict{Wait: time.Minute, KeyPrefix: true}, v, "and then the right key from that address, so that its refusals tell nothing")
	v, err = l.Check(ctx, guesser(3), authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Equal(t, authlimit.Verdict{Wait: time.Minute, KeyPrefix: true}, v, "likewise from every address that guessed")

	v, err = l.Check(ctx, from("192.0.2.200:1"), authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Zero(t, v, "the owner's address is still clean")
	v, err = l.Check(ctx, guesser(3), authlimit.SurfaceAPI, "tg_caller_other_key_0123456789", true)
	require.NoError(t, err)
	assert.Zero(t, v, "a key of another prefix is not held, even from a guesser's address under its own limit")

	clock.Advance(time.Minute)
	v, err = l.Check(ctx, guesser(3), authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Zero(t, v, "once the windows have passed, the right key works from anywhere")

	for _, k := range rec.keys {
		assert.NotContains(t, k, prefix, "a prefix is kept only as its hash")
		assert.NotContains(t, k, "wrong-guess")
	}
}

// TestTheOwnerWhoMistypesWaitsOnlyTheirOwnWindow: while others hold a
// key's prefix, the owner's own wrong key holds their right one back until
// their address's window, begun by that failure, ends; later guesses by
// others do not lengthen it.
func TestTheOwnerWhoMistypesWaitsOnlyTheirOwnWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{now: time.Date(2030, 3, 15, 12, 0, 0, 0, time.UTC)}
	l, err := authlimit.New(&authlimit.Config{Clock: clock})
	require.NoError(t, err)
	prefix := rightKey[:authlimit.DefaultKeyPrefixLength]
	guess := func(i int) {
		t.Helper()
		r := from(netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), 443).String())
		_, err := l.Check(ctx, r, authlimit.SurfaceAPI, prefix+"guess-"+string(rune('a'+i%26)), false)
		require.NoError(t, err)
	}
	for i := range 11 {
		guess(i)
	}
	clock.Advance(30 * time.Second)
	owner := from("192.0.2.50:1")
	v, err := l.Check(ctx, owner, authlimit.SurfaceAPI, prefix+"typo", false)
	require.NoError(t, err)
	assert.Equal(t, authlimit.Verdict{Wait: 30 * time.Second, KeyPrefix: true}, v, "the typo is refused for the prefix, held 30 s more")

	clock.Advance(40 * time.Second) // the guessers' window has ended; they hold the prefix again
	for i := range 11 {
		guess(100 + i)
	}
	v, err = l.Check(ctx, owner, authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Equal(t, authlimit.Verdict{Wait: time.Minute, KeyPrefix: true}, v, "within the owner's own window the right key waits")
	clock.Advance(20 * time.Second) // the owner's window, begun by the typo, has ended
	v, err = l.Check(ctx, owner, authlimit.SurfaceAPI, rightKey, true)
	require.NoError(t, err)
	assert.Zero(t, v, "after it, the right key goes on though the prefix is still held")
}

func TestWhatIsNotCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &recorder{WindowCounter: memory.New()}
	l, err := authlimit.New(&authlimit.Config{Counter: rec, Failures: 1})
	require.NoError(t, err)
	for range 5 {
		wait, err := waitOf(ctx, l, from("203.0.113.9:1"), authlimit.SurfaceMCP, "", false)
		require.NoError(t, err)
		assert.Zero(t, wait, "a request with no key is no guess")
	}
	assert.Empty(t, rec.keys)

	_, err = waitOf(ctx, l, from("203.0.113.9:1"), authlimit.SurfaceMCP, "short", false)
	require.NoError(t, err)
	assert.Equal(t, []string{"auth/addr/203.0.113.9"}, rec.keys, "a key no longer than a prefix counts by address only")

	off, err := authlimit.New(&authlimit.Config{Failures: -1})
	require.NoError(t, err)
	for range 20 {
		wait, err := waitOf(ctx, off, from("203.0.113.9:1"), authlimit.SurfaceMCP, "guess", false)
		require.NoError(t, err)
		assert.Zero(t, wait, "a negative limit turns it off")
	}
	var none *authlimit.Limiter
	wait, err := waitOf(ctx, none, from("203.0.113.9:1"), authlimit.SurfaceMCP, "guess", false)
	require.NoError(t, err)
	assert.Zero(t, wait, "a nil Limiter limits nothing")
}

func TestClientAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"Peer", "203.0.113.7:1", nil, "auth/addr/203.0.113.7"},
		{"UntrustedPeerForwardsNothing", "203.0.113.7:1", []string{"192.0.2.1"}, "auth/addr/203.0.113.7"},
		{"TrustedProxy", "10.0.0.2:1", []string{"192.0.2.1"}, "auth/addr/192.0.2.1"},
		{"NearestUntrustedHop", "10.0.0.2:1", []string{"198.51.100.66, 192.0.2.1, 10.0.0.9"}, "auth/addr/192.0.2.1"},
		{"TwoHeaders", "10.0.0.2:1", []string{"198.51.100.66", "192.0.2.1"}, "auth/addr/192.0.2.1"},
		{"GarbageStopsTheWalk", "10.0.0.2:1", []string{"nonsense, 10.0.0.9"}, "auth/addr/10.0.0.9"},
		{"NoHeader", "10.0.0.2:1", nil, "auth/addr/10.0.0.2"},
		{"IPv6By64", "[2001:db8:1:2:3:4:5:6]:1", nil, "auth/addr/2001:db8:1:2::/64"},
		{"IPv4Mapped", "[::ffff:203.0.113.7]:1", nil, "auth/addr/203.0.113.7"},
		{"NotAnAddress", "pipe", nil, "auth/addr/unknown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{WindowCounter: memory.New()}
			l, err := authlimit.New(&authlimit.Config{Counter: rec, TrustedProxies: proxies, KeyPrefixLength: -1})
			require.NoError(t, err)
			r := from(c.peer)
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			_, err = waitOf(ctx, l, r, authlimit.SurfaceAPI, "guess", false)
			require.NoError(t, err)
			assert.Equal(t, []string{c.want}, rec.keys)
		})
	}
}

func TestConcurrentGuessesAreAllCounted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := authlimit.New(nil)
	require.NoError(t, err)
	const n = 50
	waits := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			waits[i], _ = waitOf(ctx, l, from("203.0.113.7:1"), authlimit.SurfaceAPI, "guess", false)
		})
	}
	wg.Wait()
	refused := 0
	for _, w := range waits {
		if w > 0 {
			refused++
		}
	}
	assert.Equal(t, n-authlimit.DefaultFailures, refused, "past the 10th, every guess sent at once is refused")
}
