package authlimit

import (
	"fmt"
	"time"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Refusal is the error a handler answers a limited request with:
// rate_limited (429), retry after v's wait, in a message that names the
// limit that refused it, the client's address or the key's prefix, so
// that the owner of a key knows whether trying from elsewhere, or
// checking the key, is worth it.
func Refusal(v Verdict) *toolgatetype.Error {
	secs := RetryAfterSeconds(v.Wait)
	return &toolgatetype.Error{
		Code:       toolgatetype.CodeRateLimited,
		Message:    fmt.Sprintf("too many failed sign-ins %s; try again in %d seconds", v.what(), secs),
		RetryAfter: time.Duration(secs) * time.Second,
	}
}

// what says which limits refused, as the end of "too many failed
// sign-ins ...".
func (v Verdict) what() string {
	switch {
	case v.Address && v.KeyPrefix:
		return "from this address and with keys that begin like this one"
	case v.KeyPrefix:
		return "with keys that begin like this one"
	default:
		return "from this address"
	}
}

// RetryAfterSeconds is wait in whole seconds, rounded up, at least 1: what
// a Retry-After header says.
func RetryAfterSeconds(wait time.Duration) int {
	return max(1, int((wait+time.Second-1)/time.Second))
}
