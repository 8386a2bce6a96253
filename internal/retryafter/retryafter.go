// Package retryafter reads the Retry-After header (RFC 9110, section
// 10.2.3) of an answer that asks its client to wait: the gateway's upstream
// client reads the providers', and the Go client the gateway's. It imports
// only the standard library, as the client's dependency test requires.
package retryafter

import (
	"net/http"
	"time"
)

// maxSeconds bounds the delay read as seconds (about 34 years), so that the
// wait never overflows a time.Duration; a longer one is not a delay.
const maxSeconds = 1 << 30

// Parse returns how long a Retry-After value v asks to wait from now.
//
//   - Delay seconds, digits only ("120"): that many seconds. A sign, a
//     space, a fraction or more than 2^30 seconds is not a delay.
//   - An HTTP date (http.ParseTime's formats): the time until it, or 0 when
//     it has passed.
//
// Anything else, "" included, gives ok false: the caller waits as it would
// without the header.
func Parse(v string, now time.Time) (wait time.Duration, ok bool) {
	if v == "" {
		return 0, false
	}
	secs := 0
	for _, c := range []byte(v) {
		if c < '0' || c > '9' {
			secs = -1
			break
		}
		if secs = secs*10 + int(c-'0'); secs > maxSeconds {
			secs = -1
			break
		}
	}
	if secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}
