// Package weburl checks the URLs an operator or an embedder configures
// (a provider's origin, a public address, a webhook, an MCP server, an
// identity provider) against one set of rules, so that each place that
// takes one states what it allows beyond a scheme and a host, rather than
// repeating a url.Parse and its checks. Callers keep their own messages:
// the errors here say which rule a URL broke, for the caller to word.
package weburl

import (
	"errors"
	"net/url"
	"strings"
)

// Allow is what a URL may carry besides an http or https scheme and a
// host with a name. The zero Allow allows nothing else: an origin,
// "scheme://host[:port]", with or without one trailing "/".
//
// The rules are the ones url.Parse leaves undecided: an empty query ("?")
// and an empty fragment ("#") parse to nothing, and a host may be a port
// alone ("http://:8080"). Each is allowed or refused explicitly.
type Allow struct {
	// AnyScheme allows any scheme; the caller checks it.
	AnyScheme bool
	// PortOnlyHost allows a host that is a port with no name or address
	// (":8080").
	PortOnlyHost bool
	// User allows userinfo ("user:password@").
	User bool
	// Path allows a path other than "/".
	Path bool
	// Query allows a query, empty or not.
	Query bool
	// EmptyQuery allows a "?" with nothing after it (and before any "#").
	EmptyQuery bool
	// Fragment allows a fragment, empty or not.
	Fragment bool
	// EmptyFragment allows a "#" with nothing after it.
	EmptyFragment bool
}

// The rules a URL can break, in the order Check tries them.
var (
	ErrSyntax   = errors.New("weburl: not a URL")
	ErrScheme   = errors.New("weburl: not http or https")
	ErrHost     = errors.New("weburl: no host")
	ErrUser     = errors.New("weburl: userinfo")
	ErrPath     = errors.New("weburl: a path")
	ErrQuery    = errors.New("weburl: a query")
	ErrFragment = errors.New("weburl: a fragment")
)

// Check parses s and returns it, or the first rule it breaks under allow
// (one of the Err values above), in this order: syntax, scheme, host,
// userinfo, path, query, fragment. The scheme is compared in lower case,
// as url.Parse returns it.
func Check(s string, allow Allow) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, ErrSyntax
	case !allow.AnyScheme && u.Scheme != "http" && u.Scheme != "https":
		return nil, ErrScheme
	case u.Host == "" || (!allow.PortOnlyHost && u.Hostname() == ""):
		return nil, ErrHost
	case !allow.User && u.User != nil:
		return nil, ErrUser
	case !allow.Path && u.Path != "" && u.Path != "/":
		return nil, ErrPath
	case !allow.Query && (u.RawQuery != "" || (u.ForceQuery && !allow.EmptyQuery)):
		return nil, ErrQuery
	case !allow.Fragment && (u.Fragment != "" || (!allow.EmptyFragment && strings.Contains(s, "#"))):
		// url.Parse cuts the fragment at the first "#", so a "#" left in s
		// with no fragment is an empty one.
		return nil, ErrFragment
	}
	return u, nil
}

// HostPort reports whether h is a host name or IP address with an optional
// port and nothing else ("mcp.example.com", "10.0.0.5:8080", "[::1]:80"):
// what a Host header or an allow-list of hosts holds. No scheme, path,
// query, fragment, userinfo or space.
func HostPort(h string) bool {
	if h == "" || strings.ContainsAny(h, "/?#@ ") {
		return false
	}
	u, err := url.Parse("http://" + h)
	return err == nil && u.Host == h && u.Hostname() != ""
}
