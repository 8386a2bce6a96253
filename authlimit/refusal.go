package authlimit

import (
	"fmt"
	"time"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Refusal is the error a handler answers a limited request with:
// rate_limited (429), retry after wait.
func Refusal(wait time.Duration) *toolgatetype.Error {
	secs := RetryAfterSeconds(wait)
	return &toolgatetype.Error{
		Code:       toolgatetype.CodeRateLimited,
		Message:    fmt.Sprintf("too many failed sign-ins from this address or with this key; try again in %d seconds", secs),
		RetryAfter: time.Duration(secs) * time.Second,
	}
}

// RetryAfterSeconds is wait in whole seconds, rounded up, at least 1: what
// a Retry-After header says.
func RetryAfterSeconds(wait time.Duration) int {
	return max(1, int((wait+time.Second-1)/time.Second))
}
