package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/retryafter"
	"github.com/toolgate/toolgate/toolgatetype"
)

// CheckRetry decides, after an attempt that failed, whether to send the
// request again. req is the request as sent; resp is the answer (its body
// already read, and readable again), nil when none came; err is what the
// attempt came to: the gateway's *toolgatetype.Error or a *TransportError. A
// non-nil error returned stops the retries and is returned in err's place.
type CheckRetry func(ctx context.Context, req *http.Request, resp *http.Response, err error) (bool, error)

// Backoff says how long to wait before the next attempt, given the wait
// bounds, the number of attempts made before the one that just failed
// (0 after the first) and its answer (nil when none came). Between the
// polls of WaitForDecision, attempt counts the polls that found the
// request pending, and resp is nil. It has the shape of go-retryablehttp's
// Backoff, whose policies fit it as they are.
type Backoff func(min, max time.Duration, attempt int, resp *http.Response) time.Duration

// DefaultRetryPolicy retries only what cannot take effect twice:
//
//   - a request that cannot have reached the gateway (the connection was
//     refused), whatever it is;
//   - a repeatable request, which is one with an Idempotency-Key (a call)
//     or a GET, HEAD, PUT or DELETE, when the connection failed or dropped
//     before the answer arrived, or the answer was 409
//     idempotency_key_in_use, 429, 502, 503 or 504.
//
// Nothing else: not 500, not another refusal, not a failure no retry can
// cure (a certificate the client does not trust, a host that does not
// exist), and never once ctx is done.
func DefaultRetryPolicy(ctx context.Context, req *http.Request, resp *http.Response, err error) (bool, error) {
	if err == nil || ctx.Err() != nil {
		return false, nil
	}
	var te *TransportError
	if errors.As(err, &te) && te.StatusCode == 0 {
		if !te.MayHaveReachedServer && errors.Is(te.Err, syscall.ECONNREFUSED) {
			return true, nil
		}
		return repeatable(req) && !incurable(te.Err), nil
	}
	if !repeatable(req) || resp == nil {
		return false, nil
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, nil
	case http.StatusConflict:
		var ge *toolgatetype.Error
		return errors.As(err, &ge) && ge.Code == toolgatetype.CodeIdempotencyKeyInUse, nil
	}
	return false, nil
}

// repeatable reports whether sending req twice does what sending it once
// does: the gateway runs a request with an Idempotency-Key once, and GET,
// HEAD, PUT and DELETE are idempotent by definition (RFC 9110).
func repeatable(req *http.Request) bool {
	if req.Header.Get("Idempotency-Key") != "" {
		return true
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// incurable reports failures that another attempt would meet again.
func incurable(err error) bool {
	var (
		certErr    *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		wrongHost  x509.HostnameError
		invalidErr x509.CertificateInvalidError
		dnsErr     *net.DNSError
	)
	return errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &wrongHost) ||
		errors.As(err, &invalidErr) || (errors.As(err, &dnsErr) && dnsErr.IsNotFound)
}

// DefaultBackoff waits exponentially longer from min, capped at max, with
// full jitter over the upper half so that clients that failed together do
// not come back together; after a 429 or 503 it waits what Retry-After says.
func DefaultBackoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now()); ok {
			return d
		}
	}
	wait := max
	if attempt < 32 {
		if w := min << attempt; w > 0 && w < max {
			wait = w
		}
	}
	return wait/2 + rand.N(wait/2+1)
}

// retryAfterOf is how long the answer that err came from asked to wait.
func retryAfterOf(err error) time.Duration {
	var ge *toolgatetype.Error
	if errors.As(err, &ge) {
		return ge.RetryAfter
	}
	var te *TransportError
	if errors.As(err, &te) {
		return te.RetryAfter
	}
	return 0
}
