package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/registry"
)

// decodeInput decodes a call input into a tool's input struct. The gateway
// has already validated the input against the tool's schema; decoding
// strictly anyway means a BuildRequest called some other way cannot send
// fields the schema would have refused.
func decodeInput(slug string, input json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: decode input: %w", slug, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%s: decode input: data after the JSON object", slug)
	}
	return nil
}

// decodeBody decodes an upstream body into v, a struct holding only the
// fields the tool declares, so everything else the provider sent is dropped
// here. Unknown fields are allowed on purpose: providers add fields, and a
// new one must not break the tool. Any failure is the provider's, reported
// as CodeUpstreamInvalidResponse without echoing the body.
func decodeBody(provider string, body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "%s returned an empty body", provider)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "%s returned a body that is not the expected JSON: %s", provider, jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "%s returned data after the JSON document", provider)
	}
	return nil
}

// jsonProblem describes a decoding error in terms that do not quote the
// provider's bytes: encoding/json's messages can include parts of the input.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return "malformed JSON at byte " + strconv.FormatInt(syntax.Offset, 10)
	case errors.As(err, &typ):
		where := typ.Field
		if where == "" {
			where = "the document"
		}
		return fmt.Sprintf("%s should be %s, got %s", where, kindName(typ.Type), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON is cut short"
	default:
		return "the JSON does not have the expected shape"
	}
}

// kindName names a Go type the way a JSON reader would.
func kindName(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "another type"
	}
}

// invalid reports a body that decoded but is not the declared shape.
func invalid(provider, format string, args ...any) *registry.UpstreamError {
	return registry.Upstreamf(registry.CodeUpstreamInvalidResponse, "%s returned an unexpected response: %s", provider, fmt.Sprintf(format, args...))
}

// upstreamFailed reports a provider's error status. The message is ours; the
// provider's reason, when there is one, follows as a short cleaned excerpt,
// because it is untrusted text that reaches the caller.
func upstreamFailed(provider string, status int, reason string) *registry.UpstreamError {
	msg := fmt.Sprintf("%s answered HTTP %d", provider, status)
	if text := http.StatusText(status); text != "" {
		msg += " " + text
	}
	if reason = registry.Excerpt([]byte(reason)); reason != "" {
		msg += "; provider message: " + reason
	}
	return &registry.UpstreamError{Code: registry.CodeUpstreamError, Message: msg}
}

// success reports whether an upstream status is 2xx.
func success(status int) bool { return status >= 200 && status <= 299 }

// jsonReason extracts a provider's error reason from a JSON error body
// with the given shape, falling back to the raw text when the body is not
// that JSON (a proxy's HTML page, a plain-text error).
func jsonReason[T any](body []byte, reason func(T) string) string {
	var v T
	if err := json.Unmarshal(body, &v); err == nil {
		if r := strings.TrimSpace(reason(v)); r != "" {
			return r
		}
		return ""
	}
	return string(body)
}

// wholeNumber is a JSON number that must be integral. It accepts 3 and 3.0
// alike, as JSON Schema's "integer" does, so an input or body the schema
// accepts never fails to decode.
type wholeNumber int64

// maxExact is the largest integer a float64 holds exactly.
const maxExact = 1 << 53

func (n *wholeNumber) UnmarshalJSON(b []byte) error {
	s := string(b)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = wholeNumber(i)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxExact {
		return &json.UnmarshalTypeError{Value: "a number that is not an integer", Type: reflect.TypeFor[int64]()}
	}
	*n = wholeNumber(f)
	return nil
}
