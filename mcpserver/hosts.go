package mcpserver

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// hostPolicy decides which Host and Origin headers the streamable HTTP
// handler answers, as the MCP transport asks of servers: a web page whose
// name an attacker points at the server's address (DNS rebinding) sends
// its own name as Host and its own site as Origin, and is refused before
// anything else is done with its request.
//
// Allowed are the names of loopback (localhost, *.localhost, 127.0.0.0/8,
// ::1) for a request that reached the server at a loopback address, the
// address a request reached the server at when written as an IP address
// (no name lookup can produce one), the host of Options.PublicURL, and each
// of Options.AllowedHosts. A name given with a port allows that port only;
// without one, any port.
type hostPolicy struct {
	names     map[string]bool // host names and IP addresses, lower case
	hostPorts map[string]bool // "host:port", lower case
}

func newHostPolicy(publicURL string, allowed []string) hostPolicy {
	p := hostPolicy{names: map[string]bool{}, hostPorts: map[string]bool{}}
	if publicURL != "" {
		if u, err := url.Parse(publicURL); err == nil {
			p.add(u.Host)
		}
	}
	for _, h := range allowed {
		p.add(h)
	}
	return p
}

// add allows host, "name" or "name:port".
func (p hostPolicy) add(host string) {
	host = strings.ToLower(host)
	if name, port, err := net.SplitHostPort(host); err == nil && port != "" {
		p.hostPorts[net.JoinHostPort(name, port)] = true
		return
	}
	p.names[strings.Trim(host, "[]")] = true
}

// refusal returns why r is refused, or "" when its Host and Origin are
// allowed.
func (p hostPolicy) refusal(r *http.Request) string {
	local := localAddr(r)
	if !p.allows(r.Host, local) {
		return fmt.Sprintf("the Host header names %q, which is not a name of this server (a guard against DNS rebinding). "+
			"To serve requests for it, add it to the allowed hosts (\"allowedHosts\" in toolgate's config) or make it the host of the public URL.", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || !p.allows(u.Host, local) {
		return fmt.Sprintf("the Origin header names %q, a site that is not this server's (a guard against web pages calling it from a browser). "+
			"To accept requests from it, add its host to the allowed hosts (\"allowedHosts\" in toolgate's config).", origin)
	}
	return ""
}

// allows reports whether host ("name" or "name:port") is allowed for a
// request that reached the server at local (invalid when unknown).
func (p hostPolicy) allows(host string, local netip.Addr) bool {
	host = strings.ToLower(host)
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	name = strings.Trim(name, "[]")
	if name == "" {
		return false
	}
	if p.names[name] || p.hostPorts[host] {
		return true
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		ip = ip.Unmap()
		if local.IsValid() && ip == local {
			return true
		}
		return ip.IsLoopback() && (!local.IsValid() || local.IsLoopback())
	}
	loopbackName := name == "localhost" || strings.HasSuffix(name, ".localhost")
	return loopbackName && (!local.IsValid() || local.IsLoopback())
}

// localAddr is the address r reached the server at; invalid when the
// server does not say (a handler called other than by net/http's server).
func localAddr(r *http.Request) netip.Addr {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return netip.Addr{}
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
