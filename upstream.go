package toolgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/toolgate/toolgate/registry"
)

// Retry defaults for upstream reads.
const (
	DefaultUpstreamAttempts = 3
	retryWaitMin            = 100 * time.Millisecond
	retryWaitMax            = 2 * time.Second
	// maxRetryAfter caps how long a provider's Retry-After can hold a call.
	maxRetryAfter = 3 * time.Second
)

// upstreamClient sends a tool's request to its provider and reads the
// answer within the limits the gateway sets: only declared destinations,
// HTTPS unless the operator configured the origin, no redirects, retries
// only for safe reads, a deadline over every attempt, a circuit breaker per
// origin and a cap on the decompressed body.
type upstreamClient struct {
	client   *retryablehttp.Client
	timeout  time.Duration
	maxBytes int64
	breaker  *breaker
}

func newUpstreamClient(c Config) *upstreamClient {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{
		Transport: c.Transport,
		// A redirect could lead anywhere; the tool's answer is the response it got.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	rc.Logger = nil
	rc.RetryMax = c.UpstreamAttempts - 1
	rc.RetryWaitMin = retryWaitMin
	rc.RetryWaitMax = retryWaitMax
	rc.CheckRetry = c.UpstreamCheckRetry
	rc.Backoff = c.UpstreamBackoff
	// Hand the last response to the tool rather than a generic error, so the
	// caller learns what the provider said.
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return &upstreamClient{
		client:   rc,
		timeout:  c.UpstreamTimeout,
		maxBytes: c.MaxUpstreamBytes,
		breaker:  newBreaker(c.Clock, c.BreakerThreshold, c.BreakerCooldown),
	}
}

type noRetryKey struct{}

// RetrySafeReads is the default retry policy: only GETs, which the built-in
// providers document as safe to repeat, and only for failures a repeat can
// cure (transport errors, 429, 502, 503, 504).
func RetrySafeReads(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if ctx.Value(noRetryKey{}) != nil {
		return false, nil
	}
	if err != nil {
		return !errors.Is(err, ErrDestinationRefused), nil
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, nil
	}
	return false, nil
}

// JitteredBackoff is the default backoff: exponential from min, capped at
// max, with full jitter in its upper half so retries from many calls do not
// arrive together; a provider's Retry-After is honoured up to 3 seconds.
// The call's deadline still bounds every wait.
func JitteredBackoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After")); ok {
			return min2(d, maxRetryAfter)
		}
	}
	wait := min << attempt
	if wait <= 0 || wait > max {
		wait = max
	}
	return wait/2 + rand.N(wait/2+1)
}

func min2(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

func parseRetryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := time.Until(at); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}

// do sends req and returns the response with its body read up to the cap.
// Failures come back as *registry.UpstreamError with a caller-safe message.
func (u *upstreamClient) do(ctx context.Context, v *registry.Version, req *http.Request) (registry.UpstreamResponse, error) {
	if err := checkDestination(v, req.URL); err != nil {
		return registry.UpstreamResponse{}, err
	}
	origin := req.URL.Scheme + "://" + req.URL.Host
	if ok, until := u.breaker.allow(origin); !ok {
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable,
			"the provider has been failing; calls resume after %s", until.UTC().Format(time.RFC3339))
	}
	resp, err := u.send(ctx, v, req)
	failed := err != nil && !isCallerSide(err)
	if err == nil && (resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests) {
		failed = true
	}
	u.breaker.record(origin, !failed)
	return resp, err
}

// isCallerSide tells failures that say nothing about the provider's health.
func isCallerSide(err error) bool {
	var ue *registry.UpstreamError
	return errors.As(err, &ue) && ue.Code == registry.CodeUpstreamTooLarge
}

// checkDestination refuses, before a byte is sent, any request outside the
// tool's declared destinations, and plain HTTP to an origin the operator
// did not configure.
func checkDestination(v *registry.Version, u *url.URL) error {
	host := strings.ToLower(u.Hostname())
	if !allowedHost(v.Capabilities.AllowedOutboundDomains, host) {
		return registry.Upstreamf(registry.CodeUpstreamUnavailable, "the tool tried to reach %q, which it has not declared", host)
	}
	if u.Scheme != "https" && !(v.OperatorOrigin && sameOrigin(u, v.Origin)) {
		return registry.Upstreamf(registry.CodeUpstreamUnavailable, "the tool tried to reach %q without HTTPS", host)
	}
	return nil
}

func sameOrigin(u *url.URL, origin string) bool {
	o, err := url.Parse(origin)
	return err == nil && strings.EqualFold(o.Scheme, u.Scheme) && strings.EqualFold(o.Host, u.Host)
}

func (u *upstreamClient) send(ctx context.Context, v *registry.Version, req *http.Request) (registry.UpstreamResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	if req.Method != http.MethodGet {
		// The retry policy sees only the context when the transport fails,
		// so that is where a request that must not be repeated says so.
		ctx = context.WithValue(ctx, noRetryKey{}, true)
	}
	if v.OperatorOrigin && sameOrigin(req.URL, v.Origin) {
		// The operator chose this origin, perhaps a mirror on the private
		// network; only for it may the dialer connect to internal addresses.
		ctx = context.WithValue(ctx, allowInternalKey{}, true)
	}
	rreq, err := retryablehttp.FromRequest(req.WithContext(ctx))
	if err != nil {
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the upstream request could not be prepared")
	}
	resp, err := u.client.Do(rreq)
	if err != nil {
		switch {
		case errors.Is(err, ErrDestinationRefused):
			return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider's address is not a public address")
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider did not answer within %s", u.timeout)
		}
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider could not be reached")
	}
	defer resp.Body.Close()
	// The body is read as a stream and never beyond the cap; the transport
	// has already undone any gzip it negotiated, so the cap applies to the
	// decompressed bytes and a compression bomb stops here.
	body, err := readCapped(resp.Body, resp.ContentLength, u.maxBytes)
	if err != nil {
		if ctx.Err() != nil {
			return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider did not finish its answer within %s", u.timeout)
		}
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer was cut off")
	}
	if int64(len(body)) > u.maxBytes {
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamTooLarge, "the provider's answer exceeded %s", byteSize(u.maxBytes))
	}
	return registry.UpstreamResponse{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: body}, nil
}

// readCapped reads r up to max+1 bytes, so that a longer body shows. When
// the response says its length, the buffer is allocated once at that size
// rather than grown from 512 bytes; a wrong length costs only a regrowth.
func readCapped(r io.Reader, length, max int64) ([]byte, error) {
	lr := io.LimitReader(r, max+1)
	if length < 0 || length > max {
		return io.ReadAll(lr)
	}
	buf := make([]byte, 0, length+1) // +1: room to read the EOF without growing
	for {
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

func allowedHost(domains []string, host string) bool {
	for _, d := range domains {
		if host == d {
			return true
		}
	}
	return false
}

func byteSize(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
