package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/internal/readsized"
	"github.com/toolgate/toolgate/internal/strictjson"
	"github.com/toolgate/toolgate/internal/textcheck"
	"github.com/toolgate/toolgate/toolgatetype"
)

// readBody reads a request body within the size cap. Over the cap is
// payload_too_large; a body the client cut short is invalid_request.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := readsized.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes), r.ContentLength, h.opts.MaxBodyBytes)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, httpx.Errorf(httpx.CodePayloadTooLarge, "the request body is larger than %d bytes", h.opts.MaxBodyBytes)
	case err != nil:
		return nil, httpx.Errorf(toolgatetype.CodeInvalidRequest, "the request body could not be read")
	}
	return body, nil
}

// requireJSONContentType refuses bodies not declared as JSON.
func requireJSONContentType(r *http.Request) error {
	if ct := r.Header["Content-Type"]; len(ct) == 1 && ct[0] == "application/json" {
		return nil // what nearly every client sends, and ParseMediaType would accept
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return httpx.Errorf(httpx.CodeUnsupportedMediaType, "the request body must be sent as Content-Type: application/json")
	}
	return nil
}

// decodeStrict decodes one JSON value into dst, refusing unknown fields,
// wrong types and trailing data, with a message that names the field. Every
// JSON body the API reads comes through here (or through checkMembers), so
// that member names match exactly and no member appears twice, at any
// depth: encoding/json alone would take "quoteID" for "quoteId" and keep
// the last of two "quoteId"s, letting a body mean one thing to the gateway
// and another to a proxy or log that read the first.
func decodeStrict(body []byte, dst any) error {
	if err := checkMembers(body, strictjson.ShapeOf(reflect.TypeOf(dst))); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *toolgatetype.Error
		if errors.As(err, &te) {
			return te // from a type that reads its own JSON, naming the field
		}
		return httpx.Errorf(toolgatetype.CodeInvalidRequest, "%s", describeJSONError(err))
	}
	if dec.More() {
		return httpx.Errorf(toolgatetype.CodeInvalidRequest, "the request body holds more than one JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return httpx.Errorf(toolgatetype.CodeInvalidRequest, "the request body has data after its JSON value")
	}
	// Text a store keeps must be text it can keep: a field holding a NUL
	// or another control character is the caller's fault, never a 500
	// from the store that refused it. Raw JSON (a call's input) is not
	// looked into: it is kept as sent.
	if path, p := textcheck.Fields(dst); p != "" {
		e := httpx.Errorf(toolgatetype.CodeInvalidRequest, "%s %s", path, p)
		e.Parameter = path
		return e
	}
	return nil
}

// checkMembers refuses a body with a member whose name is not exactly one
// of shape's (nil: any name) or that appears twice in its object, naming
// it. A body that is not JSON passes: the decoder says what is wrong.
func checkMembers(body []byte, shape *strictjson.Shape) error {
	// A type assertion, not errors.As, whose target would cost the call
	// path an allocation: Check returns its errors unwrapped.
	if m, ok := strictjson.Check(body, shape).(*strictjson.MemberError); ok {
		return httpx.Errorf(toolgatetype.CodeInvalidRequest, "%s", m.Error())
	}
	return nil
}

// describeJSONError turns a decoder error into a sentence for the caller.
func describeJSONError(err error) string {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "the request body is empty; a JSON object is required"
	case errors.As(err, &syntax):
		return "the request body is not valid JSON"
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return "the request body must be a JSON object"
		}
		return field + " must be " + jsonKind(typeErr.Type.Kind().String())
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the request body is truncated JSON"
	}
	return "the request body is not valid JSON"
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "float64":
		return "a number"
	case "ptr":
		return "an object or null"
	}
	return "of another type"
}
