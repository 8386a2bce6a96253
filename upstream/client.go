// Package upstream sends one tool request to its provider, safely: only to
// the destinations the tool declared, over HTTPS unless the operator chose
// the origin, never to an internal address (checked at dial time, after
// DNS), with retries of safe reads only, a deadline over every attempt, a
// circuit breaker per origin and a cap on the decompressed body.
//
// The gateway owns one Client and sends every tool's request through it, so
// a built-in tool, a tool written in Go and a tool loaded from a manifest
// all get the same protections. Failures come back as
// *registry.UpstreamError, whose message is safe to show a caller.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/toolgate/toolgate/internal/readsized"
	"github.com/toolgate/toolgate/registry"
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxBodyBytes     = 1 << 20
	DefaultAttempts         = 3
	DefaultBreakerThreshold = 5
	DefaultBreakerCooldown  = 30 * time.Second
)

// Clock tells the breaker the time; toolgatetype.Clock satisfies it.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Config tunes a Client. A nil *Config, and every zero field, means the
// default.
type Config struct {
	// Timeout bounds one tool request, every attempt and wait included
	// (default 10 s).
	Timeout time.Duration
	// MaxBodyBytes caps a response body once decompressed (default 1 MiB).
	MaxBodyBytes int64
	// Attempts is how many times a safe read may be tried (default 3).
	Attempts int
	// CheckRetry decides whether to try again; nil means RetrySafeReads.
	CheckRetry retryablehttp.CheckRetry
	// Backoff says how long to wait before trying again; nil means JitteredBackoff.
	Backoff retryablehttp.Backoff
	// BreakerThreshold is how many consecutive failures of an origin open
	// its circuit (default 5); BreakerCooldown how long it stays open (30 s).
	// Failures that one principal alone sees hold back only that principal
	// (see WithPrincipal): the circuit opens for everyone when they come
	// from two principals or are clearly the provider's.
	BreakerThreshold int
	BreakerCooldown  time.Duration
	// Clock drives the breaker's cool-down; nil means the system clock.
	Clock Clock
	// Observer hears about every attempt and the breaker, for metrics and
	// traces; nil hears nothing, and costs nothing.
	Observer Observer
}

// WithDefaults returns a copy of c (nil: an empty Config) with every zero
// field set to its default.
func (c *Config) WithDefaults() Config {
	out := Config{}
	if c != nil {
		out = *c
	}
	if out.Timeout == 0 {
		out.Timeout = DefaultTimeout
	}
	if out.MaxBodyBytes == 0 {
		out.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if out.Attempts == 0 {
		out.Attempts = DefaultAttempts
	}
	if out.CheckRetry == nil {
		out.CheckRetry = RetrySafeReads
	}
	if out.Backoff == nil {
		out.Backoff = JitteredBackoff
	}
	if out.BreakerThreshold == 0 {
		out.BreakerThreshold = DefaultBreakerThreshold
	}
	if out.BreakerCooldown == 0 {
		out.BreakerCooldown = DefaultBreakerCooldown
	}
	if out.Clock == nil {
		out.Clock = systemClock{}
	}
	return out
}

// Validate reports the first field of a defaulted Config that is out of range.
func (c Config) Validate() error {
	switch {
	case c.Timeout < 0:
		return errors.New("upstream: Timeout must be positive")
	case c.MaxBodyBytes < 0:
		return errors.New("upstream: MaxBodyBytes must be positive")
	case c.Attempts < 1:
		return errors.New("upstream: Attempts must be at least 1")
	case c.BreakerThreshold < 1 || c.BreakerCooldown < 0:
		return errors.New("upstream: BreakerThreshold must be at least 1 and BreakerCooldown positive")
	}
	return nil
}

// Client sends tool requests. Safe for concurrent use; its one piece of
// state is the breaker's memory of failing origins, kept in this process.
type Client struct {
	client   *retryablehttp.Client
	timeout  time.Duration
	maxBytes int64
	breaker  *breaker
	clock    Clock
	origins  origins
	observer Observer // nil: none
}

// New returns a Client sending through transport (nil: NewTransport(),
// which refuses internal addresses at dial time; a transport of one's own
// should keep that check). cfg may be nil.
func New(transport http.RoundTripper, cfg *Config) (*Client, error) {
	c := cfg.WithDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if transport == nil {
		transport = NewTransport()
	}
	if c.Observer != nil {
		transport = observedTransport{next: transport, obs: c.Observer}
	}
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{
		Transport: transport,
		// A redirect could lead anywhere, with whatever the request
		// carried; the tool's answer is the response it got.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	rc.Logger = nil
	rc.RetryMax = c.Attempts - 1
	rc.RetryWaitMin = retryWaitMin
	rc.RetryWaitMax = retryWaitMax
	rc.CheckRetry = c.CheckRetry
	rc.Backoff = c.Backoff
	// Hand the last response to the tool rather than a generic error, so the
	// caller learns what the provider said.
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return &Client{
		client:   rc,
		timeout:  c.Timeout,
		maxBytes: c.MaxBodyBytes,
		breaker:  newBreaker(c.Clock, c.BreakerThreshold, c.BreakerCooldown),
		clock:    c.Clock,
		observer: c.Observer,
	}, nil
}

// Do sends req, built by v's tool, and returns the response with its body
// read up to the cap. Failures come back as *registry.UpstreamError with a
// caller-safe message.
func (u *Client) Do(ctx context.Context, v *registry.Version, req *http.Request) (registry.UpstreamResponse, error) {
	if err := u.checkDestination(v, req.URL); err != nil {
		return registry.UpstreamResponse{}, err
	}
	origin := req.URL.Scheme + "://" + req.URL.Host
	principal := principalOf(ctx)
	if ok, until, everyone := u.breaker.allow(origin, principal); !ok {
		wait := until.Sub(u.clock.Now())
		if everyone {
			if u.observer != nil {
				u.observer.Circuit(v, true)
			}
			return registry.UpstreamResponse{}, circuitOpen(wait,
				"the provider has been failing; calls resume after %s", until.UTC().Format(time.RFC3339))
		}
		return registry.UpstreamResponse{}, circuitOpen(wait,
			"the provider has been failing for this caller's calls; this caller's calls resume after %s",
			until.UTC().Format(time.RFC3339))
	}
	var start time.Time
	if u.observer != nil {
		start = time.Now()
		ctx = context.WithValue(ctx, observedKey{}, &observedRequest{v: v})
	}
	resp, err := u.send(ctx, v, req)
	open := u.breaker.record(origin, principal, outcomeOf(resp, err))
	if u.observer != nil {
		u.observer.Finished(ctx, v, time.Since(start))
		u.observer.Circuit(v, open)
	}
	return resp, err
}

// circuitOpen is the failure of a call the breaker holds back: the
// provider is not called, and the caller is told when to try again.
func circuitOpen(wait time.Duration, format string, args ...any) *registry.UpstreamError {
	ue := registry.Upstreamf(registry.CodeUpstreamUnavailable, format, args...)
	ue.RetryAfter = max(wait, time.Second)
	return ue
}

// outcomeOf tells the breaker what a call came to. A failure is clearly
// the provider's when no answer came (the connection refused or broken,
// the deadline passed) or the answer is a 5xx with no body. One with a
// body, or a 429, may be the caller's doing: a provider that explains
// itself is usually refusing this input, and one caller's burst can use
// up a provider's rate.
func outcomeOf(resp registry.UpstreamResponse, err error) outcome {
	switch {
	case err != nil && !isCallerSide(err):
		return providerFailed
	case err != nil:
		return succeeded
	case resp.StatusCode >= 500 && len(resp.Body) == 0:
		return providerFailed
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return callerFailed
	}
	return succeeded
}

// isCallerSide tells failures that say nothing about the provider's health.
func isCallerSide(err error) bool {
	var ue *registry.UpstreamError
	return errors.As(err, &ue) && ue.Code == registry.CodeUpstreamTooLarge
}

// checkDestination refuses, before a byte is sent, any request outside the
// tool's declared destinations, and plain HTTP to an origin the operator
// did not configure.
func (u *Client) checkDestination(v *registry.Version, target *url.URL) error {
	host := strings.ToLower(target.Hostname())
	if !allowedHost(v.Capabilities.AllowedOutboundDomains, host) {
		return registry.Upstreamf(registry.CodeUpstreamUnavailable, "the tool tried to reach %q, which it has not declared", host)
	}
	if target.Scheme != "https" && !(v.OperatorOrigin && u.origins.same(target, v.Origin)) {
		return registry.Upstreamf(registry.CodeUpstreamUnavailable, "the tool tried to reach %q without HTTPS", host)
	}
	return nil
}

func allowedHost(domains []string, host string) bool {
	for _, d := range domains {
		if host == d {
			return true
		}
	}
	return false
}

func (u *Client) send(ctx context.Context, v *registry.Version, req *http.Request) (registry.UpstreamResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	// Whether any attempt got a connection, and so may have reached the
	// provider: a request can only leave once a connection is open, after
	// DNS, the dial, the destination check and the TLS handshake.
	sent := new(atomic.Bool)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { sent.Store(true) }})
	if !v.RetrySafe() {
		// The retry policy sees only the context when the transport fails,
		// so that is where a request that must not be repeated once it may
		// have left says so.
		ctx = context.WithValue(ctx, noRetryKey{}, sent)
	}
	if v.OperatorOrigin && u.origins.same(req.URL, v.Origin) {
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
		var ue *registry.UpstreamError
		switch {
		case errors.Is(err, ErrDestinationRefused):
			ue = registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider's address is not a public address")
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			ue = registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider did not answer within %s", u.timeout)
		default:
			ue = registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider could not be reached")
		}
		ue.Sent = sent.Load()
		return registry.UpstreamResponse{}, ue
	}
	defer resp.Body.Close()
	// The body is read as a stream and never beyond the cap; the transport
	// has already undone any gzip it negotiated, so the cap applies to the
	// decompressed bytes and a compression bomb stops here.
	body, err := readCapped(resp.Body, resp.ContentLength, u.maxBytes)
	if err != nil {
		// The provider answered, so it received the request, but its
		// answer never came whole: what it did is not known.
		if ctx.Err() != nil {
			ue := registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider did not finish its answer within %s", u.timeout)
			ue.Sent = true
			return registry.UpstreamResponse{}, ue
		}
		ue := registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "the provider's answer was cut off")
		ue.Sent = true
		return registry.UpstreamResponse{}, ue
	}
	if int64(len(body)) > u.maxBytes {
		return registry.UpstreamResponse{}, registry.Upstreamf(registry.CodeUpstreamTooLarge, "the provider's answer exceeded %s", byteSize(u.maxBytes))
	}
	return registry.UpstreamResponse{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Body: body}, nil
}

// readCapped reads r up to max+1 bytes, so that a longer body shows, into
// a buffer of the length the response declared (see readsized).
func readCapped(r io.Reader, length, max int64) ([]byte, error) {
	return readsized.ReadAll(io.LimitReader(r, max+1), length, max)
}

func byteSize(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
