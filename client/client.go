package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/weburl"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxAttempts  = 10
	DefaultRetryWaitMin = 100 * time.Millisecond
	DefaultRetryWaitMax = 5 * time.Second
	DefaultPageSize     = 100
	DefaultUserAgent    = "toolgate-go-client"
)

// maxPageSize is the most entries the API gives in one page.
const maxPageSize = 100

// Options configure a Client. A nil *Options, and every zero field, means
// the default.
type Options struct {
	// HTTPClient sends the requests; nil means a client of its own, over a
	// transport of its own, that does not follow redirects. Its Timeout,
	// when set, bounds each attempt; ctx bounds the whole request.
	HTTPClient *http.Client
	// UserAgent is sent with every request (default "toolgate-go-client").
	UserAgent string
	// CheckRetry decides whether to send a request again after an
	// attempt; nil means DefaultRetryPolicy.
	CheckRetry CheckRetry
	// Backoff says how long to wait before the next attempt, and before
	// the next poll of WaitForDecision; nil means DefaultBackoff. A
	// Retry-After is waited out whatever it says.
	Backoff Backoff
	// MaxAttempts is how many times a request may be sent (default 10).
	MaxAttempts int
	// RetryWaitMin and RetryWaitMax are the shortest and longest waits
	// Backoff is given (defaults 100 ms and 5 s), between attempts and
	// between the polls of WaitForDecision.
	RetryWaitMin time.Duration
	RetryWaitMax time.Duration
	// PageSize is how many entries a listing fetches at a time, 1 to 100
	// (default 100).
	PageSize int
	// Logger is told about each retry; nil discards. The API key is never
	// logged.
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	out := Options{}
	if o != nil {
		out = *o
	}
	if out.HTTPClient == nil {
		out.HTTPClient = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			// An API answers where it is asked; a redirect would carry the
			// request, and its key, somewhere else.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if out.UserAgent == "" {
		out.UserAgent = DefaultUserAgent
	}
	if out.CheckRetry == nil {
		out.CheckRetry = DefaultRetryPolicy
	}
	if out.Backoff == nil {
		out.Backoff = DefaultBackoff
	}
	if out.MaxAttempts == 0 {
		out.MaxAttempts = DefaultMaxAttempts
	}
	if out.RetryWaitMin == 0 {
		out.RetryWaitMin = DefaultRetryWaitMin
	}
	if out.RetryWaitMax == 0 {
		out.RetryWaitMax = DefaultRetryWaitMax
	}
	if out.PageSize == 0 {
		out.PageSize = DefaultPageSize
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}

func (o Options) validate() error {
	switch {
	case o.MaxAttempts < 1:
		return errors.New("client: MaxAttempts must be at least 1")
	case o.RetryWaitMin < 0 || o.RetryWaitMax < o.RetryWaitMin:
		return errors.New("client: RetryWaitMin must not be negative nor above RetryWaitMax")
	case o.PageSize < 1 || o.PageSize > maxPageSize:
		return fmt.Errorf("client: PageSize must be 1 to %d", maxPageSize)
	}
	return nil
}

// Client calls one gateway as the principal its API key belongs to. It is a
// toolgatetype.Caller. Safe for concurrent use.
type Client struct {
	base   string // scheme://host[:port][/prefix], without a trailing slash
	apiKey string
	opts   Options
	log    *slog.Logger
	// sleep waits between attempts; tests replace it to see the waits
	// without spending them.
	sleep func(ctx context.Context, d time.Duration) error
}

// Interface guard.
var _ toolgatetype.Caller = (*Client)(nil)

// New returns a client of the gateway at baseURL (http or https, with the
// path prefix it is mounted under, if any: "https://host/gateway"), calling
// as the principal apiKey belongs to. An empty apiKey reaches only the
// public registry. opts may be nil.
func New(baseURL, apiKey string, opts *Options) (*Client, error) {
	base, err := parseBase(baseURL)
	if err != nil {
		return nil, err
	}
	if err := checkAPIKey(apiKey); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	return &Client{base: base, apiKey: apiKey, opts: o, log: o.Logger, sleep: sleep}, nil
}

func parseBase(baseURL string) (string, error) {
	u, err := weburl.Check(baseURL, weburl.Allow{PortOnlyHost: true, Path: true, EmptyQuery: true, EmptyFragment: true})
	switch {
	case errors.Is(err, weburl.ErrSyntax):
		return "", fmt.Errorf("client: the base URL %q does not parse", baseURL)
	case errors.Is(err, weburl.ErrScheme):
		return "", fmt.Errorf("client: the base URL %q must be http or https", baseURL)
	case errors.Is(err, weburl.ErrHost):
		return "", fmt.Errorf("client: the base URL %q has no host", baseURL)
	case errors.Is(err, weburl.ErrUser):
		// Credentials there would travel with every request and show in
		// every error; the API key is the credential.
		return "", errors.New("client: the base URL must not carry credentials; give the API key instead")
	case err != nil: // a query or a fragment
		return "", fmt.Errorf("client: the base URL %q must not have a query or a fragment", baseURL)
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"), nil
}

// checkAPIKey refuses a key the gateway would refuse anyway, before it is
// sent anywhere. The key itself is never part of the message.
func checkAPIKey(key string) error {
	if len(key) > 512 {
		return errors.New("client: the API key is longer than 512 characters")
	}
	for i := 0; i < len(key); i++ {
		if key[i] <= ' ' || key[i] > '~' {
			return errors.New("client: the API key must be printable ASCII without spaces")
		}
	}
	return nil
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
