package httpx

import (
	"net/http"
	"strings"
)

// BaseURL is the address the caller reached the gateway at, for absolute
// links: scheme://host[/prefix], no trailing slash.
//
//   - The host is the request's Host header.
//   - The scheme is https on a TLS connection, else http; a reverse proxy
//     that terminates TLS says so with X-Forwarded-Proto (http or https).
//   - The prefix is where the handler is mounted. Under http.StripPrefix it
//     is found by comparing the request URI with the stripped path; a
//     reverse proxy that strips a prefix itself passes it in
//     X-Forwarded-Prefix.
//
// The forwarded headers are believed only when well formed. They can only
// change links shown back to the client that sent them, and responses built
// with them list them in Vary (VaryOnForwarded), so a shared cache keeps
// their variants apart.
func BaseURL(r *http.Request) string {
	host := r.Host
	if host == "" {
		host = "localhost"
	}
	return Scheme(r) + "://" + host + Prefix(r)
}

// Scheme is https on a TLS connection, else http, unless a reverse proxy
// says otherwise in a well-formed X-Forwarded-Proto.
func Scheme(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ","); p != "" {
		switch p = strings.ToLower(strings.TrimSpace(p)); p {
		case "http", "https":
			scheme = p
		}
	}
	return scheme
}

// Prefix is where the handler is mounted, for links the browser resolves
// against this host: X-Forwarded-Prefix, then the prefix a mounting server
// stripped. "" at the root.
func Prefix(r *http.Request) string { return forwardedPrefix(r) + mountPrefix(r) }

// mountPrefix is the part of the request path that a mounting server
// removed (http.StripPrefix) before the handler saw it, or "".
func mountPrefix(r *http.Request) string {
	uri, _, _ := strings.Cut(r.RequestURI, "?")
	seen := r.URL.EscapedPath()
	if !strings.HasPrefix(uri, "/") || !strings.HasPrefix(seen, "/") || !strings.HasSuffix(uri, seen) {
		return ""
	}
	return cleanPrefix(strings.TrimSuffix(uri, seen))
}

// forwardedPrefix is X-Forwarded-Prefix when it is a plain path, or "".
func forwardedPrefix(r *http.Request) string {
	return cleanPrefix(r.Header.Get("X-Forwarded-Prefix"))
}

// cleanPrefix accepts "/a/b" made of unreserved and sub-delimiter path
// characters (and percent escapes), without empty, "." or ".." segments; it
// returns it without a trailing slash, or "" for anything else.
func cleanPrefix(p string) string {
	p = strings.TrimSuffix(p, "/")
	if p == "" || p[0] != '/' || len(p) > 200 {
		return ""
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return ""
		}
	}
	for _, c := range p {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.ContainsRune("/-._~!$&'()*+,;=:@%", c):
		default:
			return ""
		}
	}
	return p
}

// VaryOnForwarded marks a response as shaped by the forwarded headers.
func VaryOnForwarded(w http.ResponseWriter) {
	w.Header().Add("Vary", "X-Forwarded-Proto, X-Forwarded-Prefix")
}
