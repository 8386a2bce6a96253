package devidp

import (
	"fmt"
	"net"
	"net/netip"
)

// CheckLoopback refuses a listen address that is not on loopback: the
// provider signs anyone who reaches it in as anyone in its file.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %s: not a loopback address (127.0.0.1, [::1] or localhost): anyone who reaches this provider signs in as anyone in the users file", addr)
	}
	return nil
}
