package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
)

// ErrDestinationRefused is the cause of a dial to an address no tool may
// reach: loopback, private, link-local (cloud metadata among them), shared
// carrier-grade NAT, multicast, unspecified, reserved, or an IPv6 address
// that wraps an IPv4 one (NAT64, 6to4, Teredo).
var ErrDestinationRefused = errors.New("upstream: destination address refused")

// allowInternalKey marks a request to an origin the operator configured
// for the tool: the one case where internal addresses may be dialled.
type allowInternalKey struct{}

// guardian holds the list of refused networks. code.dny.dev/ssrf keeps it
// current with IANA's special-purpose registries and refuses every IPv6
// address outside global unicast, which covers the NAT64, local-use NAT64,
// site-local and IPv4-translated prefixes; within global unicast it refuses
// 6to4, Teredo and the documentation ranges. Any port is allowed: a
// provider, or an operator's mirror, may serve on any.
var guardian = ssrf.New(ssrf.WithAnyPort(), ssrf.WithAnyNetwork())

// NewTransport returns the transport a gateway uses unless given another:
// no proxy from the environment (a proxy would hide the real destination
// from the dial check), bounded timeouts, and a dialer that checks every
// address after DNS resolution, so a tool whose domain resolves to an
// internal address cannot reach it.
func NewTransport() *http.Transport {
	dialer := &net.Dialer{
		Timeout:        5 * time.Second,
		KeepAlive:      30 * time.Second,
		ControlContext: checkDialAddress,
	}
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		// No ResponseHeaderTimeout: each request's own deadline
		// (Config.Timeout) bounds the whole exchange, and a fixed one here
		// would cut requests short of a longer configured deadline.
	}
}

// checkDialAddress runs after DNS, on the very address being connected, so
// neither a DNS answer nor a rebinding between lookup and connect can lead
// a tool inside the network.
func checkDialAddress(ctx context.Context, network, address string, _ syscall.RawConn) error {
	if allowed, _ := ctx.Value(allowInternalKey{}).(bool); allowed {
		return nil
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrDestinationRefused, address)
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrDestinationRefused, address)
	}
	if InternalAddress(addr) {
		return fmt.Errorf("%w: %s is not a public address", ErrDestinationRefused, addr)
	}
	return nil
}

// InternalAddress reports whether addr is anything but a public unicast
// address. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is judged as the
// IPv4 address it carries: it is that address on the wire. That unmapping
// is the one rule kept here; the lists are code.dny.dev/ssrf's.
func InternalAddress(addr netip.Addr) bool {
	if !addr.IsValid() {
		return true
	}
	return guardian.SafeAddr(addr.Unmap()) != nil
}
