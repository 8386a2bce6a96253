package client

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// TransportError is a request the gateway's answer did not come back to:
// the connection failed or dropped before the answer was read, or
// something in between (a proxy, a load balancer) answered in its stead.
// Match it with errors.As; errors.Is sees through it to the cause, such as
// context.DeadlineExceeded.
//
// A call that ends in a TransportError may or may not have run. Retry it
// later with IdempotencyKey and the same request: the gateway runs it at
// most once, and a retry gets its result.
type TransportError struct {
	// Method and Path are the request's (Path from the API's root).
	Method, Path string
	// StatusCode is the status of an answer that was not the gateway's
	// (a proxy's 502, an HTML error page); 0 when no answer came.
	StatusCode int
	// MayHaveReachedServer is false only when the request cannot have
	// reached the gateway: the connection was never made, or a proxy
	// refused it with a status below 500.
	MayHaveReachedServer bool
	// IdempotencyKey is the key a call was sent with; empty for other
	// requests.
	IdempotencyKey string
	// Attempts is how many times the request was sent.
	Attempts int
	// RetryAfter is what the answer's Retry-After asked for, if any.
	RetryAfter time.Duration
	// Err is the cause.
	Err error
}

func (e *TransportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "client: %s %s: ", e.Method, e.Path)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "the gateway did not answer (%d instead)", e.StatusCode)
	} else {
		b.WriteString("no answer from the gateway")
	}
	if e.MayHaveReachedServer {
		b.WriteString(", though the request may have reached it")
	} else {
		b.WriteString("; the request did not reach it")
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (%d attempts)", e.Attempts)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *TransportError) Unwrap() error { return e.Err }

// mayHaveReached reports whether a request that failed with err may have
// reached the server: it cannot have when no connection was made.
func mayHaveReached(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if op, ok := e.(*net.OpError); ok && op.Op == "dial" {
			return false
		}
		if _, ok := e.(*net.DNSError); ok {
			return false
		}
	}
	return true
}
