package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// timeoutError is a net.Error that timed out, as a dial or read deadline gives.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var _ net.Error = timeoutError{}

func TestClassifyAttempts(t *testing.T) {
	t.Parallel()
	answer := func(status int) *http.Response { return &http.Response{StatusCode: status} }
	cases := []struct {
		name string
		resp *http.Response
		err  error
		want AttemptOutcome
	}{
		{"200", answer(200), nil, AttemptOutcome{AttemptOK, 200}},
		{"304", answer(304), nil, AttemptOutcome{AttemptOK, 304}},
		{"404", answer(404), nil, AttemptOutcome{AttemptClientError, 404}},
		{"429", answer(429), nil, AttemptOutcome{AttemptThrottled, 429}},
		{"503", answer(503), nil, AttemptOutcome{AttemptServerError, 503}},
		{"deadline", nil, &url.Error{Op: "Get", Err: context.DeadlineExceeded}, AttemptOutcome{Result: AttemptTimeout}},
		{"dial timeout", nil, &url.Error{Op: "Get", Err: timeoutError{}}, AttemptOutcome{Result: AttemptTimeout}},
		{"refused address", nil, fmt.Errorf("dial: %w", ErrDestinationRefused), AttemptOutcome{Result: AttemptRefused}},
		{"connection refused", nil, &url.Error{Op: "Get", Err: errors.New("connect: connection refused")}, AttemptOutcome{Result: AttemptNetworkError}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, classify(c.resp, c.err), c.name)
	}
}
