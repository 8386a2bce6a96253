package server

import (
	"bytes"
	"context"
	"net/netip"
	"time"

	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/sealing"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatehttp"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Limits are the config's limits on guessing and flooding. Zero fields
// mean the defaults.
type Limits struct {
	// FailedAuth: failed key checks (API, MCP, approval page sign-in) per
	// client address and per key prefix, in a window begun by the first.
	FailedAuth       int
	FailedAuthWindow time.Duration
	// KeyPrefixLength is how many leading characters of a key are its
	// prefix; nil means the default, 0 counts by address only.
	KeyPrefixLength *int
	// ApprovalRequests a principal may ask for in a window.
	ApprovalRequests      int
	ApprovalRequestWindow time.Duration
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client.
	TrustedProxies []netip.Prefix
}

// sealingKeys checks "sealingKeys": base64url keys of 32 bytes, the first
// sealing and every one opening. No error quotes a key.
func sealingKeys(path string, in []str) ([][]byte, error) {
	if len(in) == 0 {
		return nil, errorf(path, "lists no key: leave it out to have the instances keep one in the store")
	}
	out := make([][]byte, 0, len(in))
	for i, s := range strs(in) {
		key, err := sealing.ParseKey(s)
		if err != nil {
			return nil, errorf(index(path, i), "must be base64url of %d random bytes (openssl rand -base64 32 | tr '+/' '-_')", sealing.KeySize)
		}
		for _, other := range out {
			if bytes.Equal(other, key) {
				return nil, errorf(index(path, i), "this key is given twice")
			}
		}
		out = append(out, key)
	}
	return out, nil
}

// limitsConfigJSON is "limits".
type limitsConfigJSON struct {
	FailedAuth       *failedAuthJSON `json:"failedAuth"`
	ApprovalRequests *windowJSON     `json:"approvalRequests"`
	TrustedProxies   []str           `json:"trustedProxies"`
}

// windowJSON is {"max": n, "window": "1m"}.
type windowJSON struct {
	Max    *count    `json:"max"`
	Window *duration `json:"window"`
}

// failedAuthJSON is a windowJSON with "keyPrefixLength".
type failedAuthJSON struct {
	Max             *count    `json:"max"`
	Window          *duration `json:"window"`
	KeyPrefixLength *count    `json:"keyPrefixLength"`
}

func (in *limitsConfigJSON) limits(path string) (Limits, error) {
	var l Limits
	var err error
	if w := in.FailedAuth; w != nil {
		if l.FailedAuth, err = windowMax(at(path, "failedAuth"), w.Max); err != nil {
			return Limits{}, err
		}
		l.FailedAuthWindow, l.KeyPrefixLength = w.Window.value(), w.KeyPrefixLength.intPtr()
	}
	if w := in.ApprovalRequests; w != nil {
		if l.ApprovalRequests, err = windowMax(at(path, "approvalRequests"), w.Max); err != nil {
			return Limits{}, err
		}
		l.ApprovalRequestWindow = w.Window.value()
	}
	if l.TrustedProxies, err = trustedProxies(at(path, "trustedProxies"), in.TrustedProxies); err != nil {
		return Limits{}, err
	}
	return l, nil
}

// windowMax is a window's "max", at least 1 when given.
func windowMax(path string, most *count) (int, error) {
	if most == nil {
		return 0, nil
	}
	if *most < 1 {
		return 0, errorf(at(path, "max"), "must be at least 1")
	}
	return int(*most), nil
}

// trustedProxies reads addresses and CIDR prefixes.
func trustedProxies(path string, in []str) ([]netip.Prefix, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]netip.Prefix, 0, len(in))
	for i, s := range strs(in) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, errorf(index(path, i), "%q is neither an IP address nor a CIDR prefix (10.0.0.0/8)", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// fleet is what the instances on one store share beyond the gateway's own
// state: the approval pages' sessions, the counts of failed key checks,
// and the keys state is sealed with.
type fleet struct {
	// sessions is nil for the memory store: this process's are the only ones.
	sessions  approvalpage.SessionStore
	authLimit *authlimit.Limiter
	sealing   *sealing.Keys
}

// newFleet sets up the fleet's parts over store. A store other instances
// may share (SQLite, PostgreSQL) keeps the sessions and the counts; the
// sealing keys are the configured ones, or the one kept in the store.
func newFleet(ctx context.Context, cfg *Config, store storage.Store, clock toolgatetype.Clock, tel *telemetry) (*fleet, error) {
	f := &fleet{}
	if cfg.StorageKind() != storageMemory {
		f.sessions = toolgatehttp.NewStoreSessions(store, clock)
	}
	lc := &authlimit.Config{
		Failures:       cfg.Limits.FailedAuth,
		Window:         cfg.Limits.FailedAuthWindow,
		TrustedProxies: cfg.Limits.TrustedProxies,
		Clock:          clock,
	}
	if p := cfg.Limits.KeyPrefixLength; p != nil {
		lc.KeyPrefixLength = -1 // 0 in the file counts by address only
		if *p > 0 {
			lc.KeyPrefixLength = *p
		}
	}
	lc.Counter = store
	if tel.metrics != nil { // a nil *Registry in the interface would not be nil
		lc.Metrics = tel.metrics
	}
	var err error
	if f.authLimit, err = authlimit.New(lc); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
	defer cancel()
	if f.sealing, err = sealing.FleetKeys(ctx, store, cfg.SealingKeys); err != nil {
		return nil, err
	}
	return f, nil
}
