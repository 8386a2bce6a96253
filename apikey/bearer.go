package apikey

import (
	"net/http"
	"strings"
)

// MaxLength is the length of the longest key looked up. A longer one is
// refused without a lookup, as any unknown key is.
const MaxLength = 512

// BearerToken returns the key of a request's "Authorization: Bearer <key>"
// header. A missing, repeated or malformed header, or a key longer than
// MaxLength, yields ok false: callers answer all of them alike.
func BearerToken(r *http.Request) (key string, ok bool) {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return "", false
	}
	scheme, token, found := strings.Cut(values[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > MaxLength || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}
