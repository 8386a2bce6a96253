package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolgate/toolgate/internal/weburl"
)

// ErrOtherOrigin is the cause of a request a transport of one origin
// (NewOriginTransport) refused to send elsewhere.
var ErrOtherOrigin = errors.New("upstream: request to another origin than the configured one refused")

// NewOriginTransport returns a transport that sends requests to origin
// (scheme://host[:port]) only, and refuses any other before a byte leaves.
// The operator configured origin, so, as for any tool's origin the operator
// sets, its address may be an internal one; next is asked to dial it even
// so. next nil means NewTransport(), which refuses internal addresses for
// everything else; a transport of one's own should keep that check too.
func NewOriginTransport(origin string, next http.RoundTripper) (http.RoundTripper, error) {
	u, err := weburl.Check(origin, weburl.Allow{PortOnlyHost: true, EmptyQuery: true, EmptyFragment: true})
	if err != nil {
		return nil, fmt.Errorf("upstream: origin %q must be scheme://host[:port]", origin)
	}
	if next == nil {
		next = NewTransport()
	}
	return originTransport{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Host), next: next}, nil
}

type originTransport struct {
	scheme, host string
	next         http.RoundTripper
}

func (t originTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.EqualFold(req.URL.Scheme, t.scheme) || !strings.EqualFold(req.URL.Host, t.host) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s://%s", ErrOtherOrigin, req.URL.Scheme, req.URL.Host)
	}
	return t.next.RoundTrip(req.WithContext(context.WithValue(req.Context(), allowInternalKey{}, true)))
}
