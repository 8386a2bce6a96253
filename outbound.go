package toolgate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrDestinationRefused is the cause of a dial to an address no tool may
// reach: loopback, private, link-local (cloud metadata among them), shared
// carrier-grade NAT, multicast, unspecified or reserved.
var ErrDestinationRefused = errors.New("toolgate: destination address refused")

// allowInternalKey marks a request to an origin the operator configured
// for the tool: the one case where internal addresses may be dialled.
type allowInternalKey struct{}

// NewUpstreamTransport returns the transport the gateway uses when
// Config.Transport is nil: no proxy from the environment (a proxy would
// hide the real destination from the dial check), bounded timeouts, and a
// dialer that checks every address after DNS resolution, so a tool whose
// domain resolves to an internal address cannot reach it.
func NewUpstreamTransport() *http.Transport {
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
		// No ResponseHeaderTimeout: each call's own deadline
		// (Config.UpstreamTimeout) bounds the whole exchange, and a fixed
		// one here would cut calls short of a longer configured deadline.
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

var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: an IPv4 address in disguise
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2002::/16"),       // 6to4: an IPv4 address in disguise
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("2001::/32"),       // Teredo: an IPv4 address in disguise
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated
}

// InternalAddress reports whether addr is anything but a public unicast
// address. IPv4-mapped IPv6 addresses are judged as the IPv4 they carry.
func InternalAddress(addr netip.Addr) bool {
	addr = addr.Unmap()
	if addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() || addr.IsMulticast() || addr.IsUnspecified() || !addr.IsValid() {
		return true
	}
	for _, p := range refusedPrefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
