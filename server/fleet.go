package server

import (
	"bytes"
	"context"
	"net/netip"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/approvalpage"
	"github.com/toolgate/toolgate/authlimit"
	"github.com/toolgate/toolgate/sealing"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatehttp"
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

// sealingKeys parses "sealingKeys": base64url keys of 32 bytes, the first
// sealing and every one opening. No error quotes a key.
func (configParser) sealingKeys(n node) ([][]byte, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, n.errorf("lists no key: leave it out to have the instances keep one in the store")
	}
	out := make([][]byte, 0, len(items))
	for _, item := range items {
		s, err := item.str()
		if err != nil {
			return nil, err
		}
		key, err := sealing.ParseKey(s)
		if err != nil {
			return nil, item.errorf("must be base64url of %d random bytes (openssl rand -base64 32 | tr '+/' '-_')", sealing.KeySize)
		}
		for _, other := range out {
			if bytes.Equal(other, key) {
				return nil, item.errorf("this key is given twice")
			}
		}
		out = append(out, key)
	}
	return out, nil
}

// limits parses "limits".
func (configParser) limits(n node) (Limits, error) {
	fs, err := n.fields("failedAuth", "approvalRequests", "trustedProxies")
	if err != nil {
		return Limits{}, err
	}
	var l Limits
	for _, f := range fs {
		switch f.name {
		case "failedAuth":
			err = windowLimit(f.node, &l.FailedAuth, &l.FailedAuthWindow, &l.KeyPrefixLength)
		case "approvalRequests":
			err = windowLimit(f.node, &l.ApprovalRequests, &l.ApprovalRequestWindow, nil)
		case "trustedProxies":
			l.TrustedProxies, err = trustedProxies(f.node)
		}
		if err != nil {
			return Limits{}, err
		}
	}
	return l, nil
}

// windowLimit parses {"max": n, "window": "1m"}, and "keyPrefixLength"
// when prefix is not nil.
func windowLimit(n node, most *int, window *time.Duration, prefix **int) error {
	allowed := []string{"max", "window"}
	if prefix != nil {
		allowed = append(allowed, "keyPrefixLength")
	}
	fs, err := n.fields(allowed...)
	if err != nil {
		return err
	}
	for _, f := range fs {
		switch f.name {
		case "max":
			if *most, err = f.count(); err == nil && *most < 1 {
				err = f.errorf("must be at least 1")
			}
		case "window":
			*window, err = f.duration()
		case "keyPrefixLength":
			var k int
			k, err = f.count()
			*prefix = &k
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// trustedProxies parses addresses and CIDR prefixes.
func trustedProxies(n node) ([]netip.Prefix, error) {
	items, err := n.items()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Prefix, 0, len(items))
	for _, item := range items {
		s, err := item.str()
		if err != nil {
			return nil, err
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, item.errorf("%q is neither an IP address nor a CIDR prefix (10.0.0.0/8)", s)
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
func newFleet(ctx context.Context, cfg *Config, store storage.Store, clock toolgate.Clock, tel *telemetry) (*fleet, error) {
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
