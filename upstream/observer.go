package upstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/toolgate/toolgate/registry"
)

// Observer hears what happens to tool requests, for metrics and traces. Its
// methods are called on the request's path, so they must be quick, and from
// many goroutines at once. Nothing it is given carries a request body, and
// it must not read one: a request's URL, body and headers may hold the
// tool's input and the provider's credential.
type Observer interface {
	// Attempt is called as each attempt of a request is sent, retries
	// included (n counts from 0), with the request whose context is the
	// call's. The function it returns is called once the attempt has its
	// answer's headers, or has failed.
	Attempt(req *http.Request, v *registry.Version, n int) func(AttemptOutcome)
	// Finished is called once a request is over, every attempt, wait and
	// the reading of the answer included.
	Finished(ctx context.Context, v *registry.Version, d time.Duration)
	// Circuit is called after every request, and when the circuit breaker
	// refuses one, with whether the tool's origin is failing fast: open
	// means the breaker has counted its threshold of consecutive failures
	// and no success since.
	Circuit(v *registry.Version, open bool)
}

// AttemptResult is how one attempt ended, as a small fixed set of values.
type AttemptResult string

// Attempt results.
const (
	AttemptOK           AttemptResult = "ok"            // a response below 400
	AttemptClientError  AttemptResult = "client_error"  // 4xx other than 429: the provider refused this request
	AttemptThrottled    AttemptResult = "throttled"     // 429
	AttemptServerError  AttemptResult = "server_error"  // 5xx
	AttemptTimeout      AttemptResult = "timeout"       // the deadline passed before an answer
	AttemptNetworkError AttemptResult = "network_error" // no answer: DNS, connection, TLS
	AttemptRefused      AttemptResult = "refused"       // the address is internal; nothing was sent
)

// AttemptResults are every AttemptResult.
var AttemptResults = []AttemptResult{
	AttemptOK, AttemptClientError, AttemptThrottled, AttemptServerError,
	AttemptTimeout, AttemptNetworkError, AttemptRefused,
}

// AttemptOutcome is what an Observer learns about one attempt.
type AttemptOutcome struct {
	Result AttemptResult
	// StatusCode is the provider's HTTP status; 0 when there was no answer.
	StatusCode int
}

// classify names the outcome of one round trip.
func classify(resp *http.Response, err error) AttemptOutcome {
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, ErrDestinationRefused):
			return AttemptOutcome{Result: AttemptRefused}
		case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
			return AttemptOutcome{Result: AttemptTimeout}
		}
		return AttemptOutcome{Result: AttemptNetworkError}
	}
	o := AttemptOutcome{StatusCode: resp.StatusCode}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		o.Result = AttemptThrottled
	case resp.StatusCode >= 500:
		o.Result = AttemptServerError
	case resp.StatusCode >= 400:
		o.Result = AttemptClientError
	default:
		o.Result = AttemptOK
	}
	return o
}

// observedKey carries, in a request's context, what observedTransport
// needs to tell the Observer about each of its attempts.
type observedKey struct{}

type observedRequest struct {
	v        *registry.Version
	attempts int
}

// observedTransport tells an Observer about each attempt it sends.
type observedTransport struct {
	next http.RoundTripper
	obs  Observer
}

func (t observedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	or, _ := req.Context().Value(observedKey{}).(*observedRequest)
	if or == nil {
		return t.next.RoundTrip(req)
	}
	// Attempts of one request follow one another, never overlap.
	n := or.attempts
	or.attempts++
	done := t.obs.Attempt(req, or.v, n)
	resp, err := t.next.RoundTrip(req)
	done(classify(resp, err))
	return resp, err
}
