package apikey

import "net/http"

// MaxLength is the length of the longest key looked up. A longer one is
// refused without a lookup, as any unknown key is.
const MaxLength = 512

// BearerToken returns the key of a request's "Authorization: Bearer <key>"
// header. A missing, repeated or malformed header, or a key longer than
// MaxLength, yields ok false: callers answer all of them alike.
func BearerToken(r *http.Request) (key string, ok bool) {
	return bearer(r, MaxLength)
}
