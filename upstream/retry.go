package upstream

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/internal/retryafter"
)

const (
	retryWaitMin = 100 * time.Millisecond
	retryWaitMax = 2 * time.Second
	// maxRetryAfter caps how long a provider's Retry-After can hold a call.
	maxRetryAfter = 3 * time.Second
)

// noRetryKey marks a request of a tool that is not retry-safe, for the retry
// policy, which sees only the context when the transport fails. Its value,
// an *atomic.Bool, turns true once an attempt got a connection: from then
// on the request may have reached the provider.
type noRetryKey struct{}

// RetrySafeReads is the default retry policy. A request of a retry-safe
// tool (registry.Version.RetrySafe) is tried again for the failures a
// repeat can cure: transport errors other than a refused destination, 429,
// 502, 503 and 504. A request of any other tool is tried again only when
// it provably never left (no attempt got a connection), since a provider
// that received it may have acted on it.
func RetrySafeReads(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if sent, ok := ctx.Value(noRetryKey{}).(*atomic.Bool); ok {
		return err != nil && !sent.Load() && !errors.Is(err, ErrDestinationRefused), nil
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
// The request's deadline still bounds every wait.
func JitteredBackoff(min, max time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if d, ok := retryafter.Parse(resp.Header.Get("Retry-After"), time.Now()); ok {
			return minDuration(d, maxRetryAfter)
		}
	}
	wait := min << attempt
	if wait <= 0 || wait > max {
		wait = max
	}
	return wait/2 + rand.N(wait/2+1)
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}
