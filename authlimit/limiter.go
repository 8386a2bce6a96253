package authlimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/internal/windowcount"
	"github.com/toolgate/toolgate/storage"
)

// Defaults of Config fields left zero.
const (
	DefaultFailures        = 10
	DefaultWindow          = time.Minute
	DefaultKeyPrefixLength = 12
)

// Surface is where a check was made, the label of the metrics.
type Surface string

// The surfaces.
const (
	SurfaceAPI          Surface = "api"
	SurfaceMCP          Surface = "mcp"
	SurfaceApprovalPage Surface = "approval_page"
)

var surfaces = []Surface{SurfaceAPI, SurfaceMCP, SurfaceApprovalPage}

// Clock tells the time.
type Clock interface{ Now() time.Time }

// Config configures a Limiter. A nil *Config, and every zero field, means
// the default.
type Config struct {
	// Failures is how many failed checks a client address, or a key
	// prefix, may have in a window before checks are refused until the
	// window ends (default 10): every check from the address; every wrong
	// key with the prefix, and its right key only from an address that
	// has failed too. Negative turns the limit off.
	Failures int
	// Window is how long a window lasts from its first failure (default
	// one minute).
	Window time.Duration
	// KeyPrefixLength is how many leading characters of a key make its
	// prefix (default 12). Negative counts by address only.
	KeyPrefixLength int
	// TrustedProxies are the addresses of the reverse proxies in front of
	// the gateway, whose X-Forwarded-For is believed; none means the
	// connection's peer is the client.
	TrustedProxies []netip.Prefix
	// Counter keeps the counts; nil means this process's memory. Give the
	// store the fleet shares (when it is a storage.WindowCounter) to count
	// across the fleet.
	Counter storage.WindowCounter
	// Clock tells the time; nil means the system clock.
	Clock Clock
	// Metrics is where the Limiter registers its Prometheus metrics; nil
	// means none.
	Metrics prometheus.Registerer
}

// Limiter counts failed checks and says which to refuse. Safe for
// concurrent use; one Limiter shared by every handler of a process counts
// a client's failures on all of them together.
type Limiter struct {
	failures  int64
	window    time.Duration
	prefixLen int
	proxies   []netip.Prefix
	counter   storage.WindowCounter
	clock     Clock
	metrics   *metrics
}

// New returns a Limiter. cfg may be nil.
func New(cfg *Config) (*Limiter, error) {
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	switch {
	case c.Window < 0:
		return nil, errors.New("authlimit: Window must be positive")
	case c.Failures == 0:
		c.Failures = DefaultFailures
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.KeyPrefixLength == 0 {
		c.KeyPrefixLength = DefaultKeyPrefixLength
	}
	if c.Counter == nil {
		c.Counter = &windowcount.Memory{}
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	m, err := newMetrics(c.Metrics)
	if err != nil {
		return nil, err
	}
	return &Limiter{
		failures:  int64(c.Failures),
		window:    c.Window,
		prefixLen: c.KeyPrefixLength,
		proxies:   append([]netip.Prefix(nil), c.TrustedProxies...),
		counter:   c.Counter,
		clock:     c.Clock,
		metrics:   m,
	}, nil
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Verdict is what Check decided of one check: nothing when the request
// goes on as the check decided, otherwise how long until it may be tried
// again and which limits refused it.
type Verdict struct {
	// Wait is zero when the request goes on, and otherwise how long until
	// it may be tried again: the longest wait of the limits that refused.
	Wait time.Duration
	// Address is set when the client address failed too often.
	Address bool
	// KeyPrefix is set when keys with this key's prefix failed too often.
	KeyPrefix bool
}

// Limited reports whether the request must be refused with 429.
func (v Verdict) Limited() bool { return v.Wait > 0 }

// Check judges one check of credential (a key or token, "" when the
// request carried none), made for request r on surface, which accepted it
// or not. A zero Verdict means the request goes on as the check decided;
// otherwise it must be refused with 429 and Retry-After, whatever the
// check decided.
//
// A failed check is counted, and refused when its address's or its
// prefix's window is past the limit. An accepted one is refused when its
// address's window holds the limit, or its prefix's does and the address
// has failed in its own window: never for the prefix alone (see the
// package doc). A request that carried no credential is no guess, and is
// not counted. An error means the counts could not be read or written:
// the request must then fail as the gateway's own error would, alike for a
// right and a wrong credential.
func (l *Limiter) Check(ctx context.Context, r *http.Request, surface Surface, credential string, accepted bool) (Verdict, error) {
	if l == nil || l.failures < 0 || (credential == "" && !accepted) {
		return Verdict{}, nil
	}
	keys := l.keys(r, credential)
	now := l.clock.Now()
	var (
		windows []storage.Window
		err     error
		over    int64 // the count past which a window refuses
	)
	if accepted {
		windows, err = l.counter.Windows(ctx, keys, now)
		over = l.failures - 1
	} else {
		windows, err = l.counter.CountEvent(ctx, storage.WindowEvent{Keys: keys, Window: l.window, Now: now})
		over = l.failures
		l.metrics.failed(surface)
	}
	if err != nil {
		return Verdict{}, fmt.Errorf("authlimit: %w", err)
	}
	if len(windows) != len(keys) {
		return Verdict{}, fmt.Errorf("authlimit: %d windows for %d keys", len(windows), len(keys))
	}
	var v Verdict
	addr := windows[0]
	if addr.Live(now) && addr.Count > over {
		v.Address = true
		v.Wait = addr.End.Sub(now)
	}
	// An accepted key passes a held prefix from an address with no failure
	// of its own in a live window; a failed one never does.
	addrFailed := !accepted || (addr.Live(now) && addr.Count > 0)
	if len(windows) > 1 && addrFailed {
		if p := windows[1]; p.Live(now) && p.Count > over {
			v.KeyPrefix = true
			v.Wait = max(v.Wait, p.End.Sub(now))
		}
	}
	if v.Limited() {
		l.metrics.limited(surface)
	}
	return v, nil
}

// keys are the windows a check of credential from r counts in: its
// client's address first, and its prefix when credential is longer than
// one.
func (l *Limiter) keys(r *http.Request, credential string) []string {
	keys := []string{"auth/addr/" + l.clientAddr(r)}
	if l.prefixLen > 0 && len(credential) > l.prefixLen {
		sum := sha256.Sum256([]byte("toolgate key prefix\x00" + credential[:l.prefixLen]))
		keys = append(keys, "auth/prefix/"+hex.EncodeToString(sum[:16]))
	}
	return keys
}

// clientAddr is the address r's failures count under: the peer, or the
// nearest address a trusted proxy forwarded for; an IPv6 address by its
// /64.
func (l *Limiter) clientAddr(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return "unknown"
	}
	addr := ap.Addr().Unmap()
	if l.trusted(addr) {
		addr = l.forwardedFor(r, addr)
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

// forwardedFor walks X-Forwarded-For from the nearest hop back and
// returns the first address that is no trusted proxy; peer when the
// header names none, or names something that is not an address (a client
// may write anything in it, but only after the addresses proxies append).
func (l *Limiter) forwardedFor(r *http.Request, peer netip.Addr) netip.Addr {
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for part := range splitComma(v) {
			hops = append(hops, part)
		}
	}
	addr := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(hops[i])
		if err != nil {
			return addr
		}
		addr = a.Unmap()
		if !l.trusted(addr) {
			return addr
		}
	}
	return addr
}

func (l *Limiter) trusted(a netip.Addr) bool {
	for _, p := range l.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Default returns a Limiter with the defaults, counting in this process's
// memory: what a handler given none uses.
func Default() *Limiter {
	l, _ := New(nil) // the defaults are valid, and no metrics means no registration error
	return l
}
