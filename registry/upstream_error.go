package registry

import (
	"fmt"
	"strings"
	"time"
	"unicode"
)

// Codes of failed executions. They appear as error.code in an execution
// result with status "failed"; none of these executions is charged.
const (
	// CodeUpstreamError: the provider answered with an error status.
	CodeUpstreamError = "upstream_error"
	// CodeUpstreamInvalidResponse: the provider's body could not be read as the tool's output.
	CodeUpstreamInvalidResponse = "upstream_invalid_response"
	// CodeUpstreamUnavailable: the provider could not be reached, or timed out.
	CodeUpstreamUnavailable = "upstream_unavailable"
	// CodeUpstreamTooLarge: the provider's body exceeded the size cap.
	CodeUpstreamTooLarge = "upstream_too_large"
	// CodeOutputInvalid: the normalized output failed the tool's output schema,
	// or the tool declares none.
	CodeOutputInvalid = "output_invalid"
)

// UpstreamError is a failure a tool's Normalize reports about its provider's
// response. Message is shown to the caller, so tools build it from their own
// words and at most a short, cleaned excerpt of the provider's text (see
// Excerpt): provider text is untrusted data.
type UpstreamError struct {
	Code    string
	Message string
	// Sent is true when the request may have reached the provider and no
	// complete answer came back (the connection broke after the request
	// went out, the deadline passed while waiting, the answer was cut
	// off): the provider may have run it. False when the request provably
	// never left (the connection was refused, the name did not resolve, the
	// TLS handshake failed, the destination was refused) or an answer came.
	Sent bool
	// RetryAfter, when set, is how long until a call may succeed: the
	// gateway's circuit breaker holds calls to the provider back until
	// then, for everyone or for this caller.
	RetryAfter time.Duration
}

func (e *UpstreamError) Error() string { return e.Message }

// Upstreamf returns an *UpstreamError with a formatted message.
func Upstreamf(code, format string, args ...any) *UpstreamError {
	return &UpstreamError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// maxExcerpt bounds how much provider text can reach a caller.
const maxExcerpt = 200

// Excerpt returns provider text fit to quote in an error message: control
// and invisible format characters dropped, invalid UTF-8 replaced, white
// space folded, cut to 200 characters.
func Excerpt(b []byte) string {
	return excerptText(string(b))
}

// excerptText is Excerpt of a string.
func excerptText(s string) string {
	var sb strings.Builder
	space := false
	n := 0
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = sb.Len() > 0
			continue
		}
		if unicode.Is(unicode.Cf, r) {
			// Invisible format characters (direction overrides, zero-width
			// joiners) could make the excerpt read as something else.
			continue
		}
		need := 1
		if space {
			need = 2
		}
		if n+need > maxExcerpt {
			// Cut before a pending space too, so the excerpt never ends in one.
			sb.WriteString("…")
			break
		}
		if space {
			sb.WriteByte(' ')
			n++
			space = false
		}
		sb.WriteRune(r)
		n++
	}
	return sb.String()
}
