package toolgate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/toolgate/toolgate/registry"
)

// upstreamClient sends a tool's request to its provider and reads the
// answer within the limits the gateway sets: only declared destinations, no
// redirects, a deadline over every attempt and a cap on the body.
type upstreamClient struct {
	client   *retryablehttp.Client
	timeout  time.Duration
	maxBytes int64
}

func newUpstreamClient(transport http.RoundTripper, timeout time.Duration, maxBytes int64) *upstreamClient {
	c := retryablehttp.NewClient()
	c.HTTPClient = &http.Client{
		Transport: transport,
		// A redirect could lead anywhere; the tool's answer is the response it got.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c.Logger = nil
	c.RetryMax = 2 // three attempts in all
	c.RetryWaitMin = 100 * time.Millisecond
	c.RetryWaitMax = 2 * time.Second
	c.CheckRetry = retrySafeReads
	c.Backoff = retryablehttp.LinearJitterBackoff
	// Hand the last response to the tool rather than a generic error, so the
	// caller learns what the provider said.
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return &upstreamClient{client: c, timeout: timeout, maxBytes: maxBytes}
}

// retrySafeReads retries only GETs, which the built-in providers document as
// safe to repeat, and only for failures a repeat can cure.
func retrySafeReads(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if ctx.Value(noRetryKey{}) != nil {
		return false, nil
	}
	if err != nil {
		return true, nil
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, nil
	}
	return false, nil
}

type noRetryKey struct{}

// do sends req and returns the response with its body read up to the cap.
// Failures come back as *registry.UpstreamError with a caller-safe message.
func (u *upstreamClient) do(ctx context.Context, v *registry.Version, req *http.Request) (registry.UpstreamResponse, error) {
	host := strings.ToLower(req.URL.Hostname())
	if !allowedHost(v.Capabilities.AllowedOutboundDomains, host) {
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable,
			"the tool tried to reach %q, which it has not declared", host)
	}
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	if req.Method != http.MethodGet {
		// The retry policy sees only the context when the transport fails,
		// so that is where a request that must not be repeated says so.
		ctx = context.WithValue(ctx, noRetryKey{}, true)
	}
	rreq, err := retryablehttp.FromRequest(req.WithContext(ctx))
	if err != nil {
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the upstream request could not be prepared")
	}
	resp, err := u.client.Do(rreq)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider did not answer within %s", u.timeout)
		}
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider could not be reached")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, u.maxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider did not finish its answer within %s", u.timeout)
		}
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider's answer was cut off")
	}
	if int64(len(body)) > u.maxBytes {
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamTooLarge, "the provider's answer exceeded %s", byteSize(u.maxBytes))
	}
	return registry.UpstreamResponse{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: body}, nil
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
