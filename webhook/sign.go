package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts a Standard Webhooks signing secret as written in
// configuration: "whsec_" and the secret's bytes in base64.
const SecretPrefix = "whsec_"

// Signing secrets are 24 to 64 random bytes (Standard Webhooks: at least
// 192 bits, at most 512).
const (
	minSecretBytes = 24
	maxSecretBytes = 64
)

// ErrBadSecret says a signing secret is not "whsec_" and 24 to 64 bytes of
// base64. The secret is never part of the message.
var ErrBadSecret = errors.New("webhook: the secret must be whsec_ followed by 24 to 64 random bytes in base64")

// ParseSecret decodes a "whsec_..." signing secret into its bytes.
func ParseSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return nil, ErrBadSecret
	}
	return key, nil
}

// Sign is the webhook-signature header value of one delivery attempt, as
// the Standard Webhooks specification defines it: "v1," and the base64
// HMAC-SHA256, keyed with the secret's bytes, of "{id}.{timestamp}.{payload}",
// the timestamp in Unix seconds. The few lines are written here rather than
// taken from the specification's own Go library, which is not among this
// module's dependencies; the tests hold them to the specification's
// published test vector.
func Sign(key []byte, id string, timestamp time.Time, payload []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(timestamp.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(payload)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Verify reports whether a webhook-signature header holds a valid v1
// signature of the attempt, comparing in constant time. A receiver in Go
// can use it; this package's tests use it to check what it sends.
func Verify(key []byte, id string, timestamp time.Time, payload []byte, header string) bool {
	want := Sign(key, id, timestamp, payload)
	ok := false
	for _, sig := range strings.Fields(header) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			ok = true
		}
	}
	return ok
}
