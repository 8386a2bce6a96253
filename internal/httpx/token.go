package httpx

import (
	"net/http"

	"github.com/toolgate/toolgate/apikey"
)

// AccessToken returns the request's bearer credential when tokens is not
// nil (access tokens are accepted) and the credential is shaped as one of
// its tokens. Anything else, no credential included, is left to the API
// key checks: ok false.
func AccessToken(r *http.Request, tokens apikey.TokenVerifier) (token string, ok bool) {
	if tokens == nil {
		return "", false
	}
	cred, ok := apikey.BearerCredential(r)
	if !ok || !tokens.IsToken(cred) {
		return "", false
	}
	return cred, true
}
