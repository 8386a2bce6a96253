package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// responseReader turns a provider's answer into a manifest tool's output:
// the part output.pointer names, projected onto the output schema so that
// fields the schema does not declare are dropped. The gateway validates the
// result against the output schema afterwards.
type responseReader struct {
	provider   string  // the provider's name, for messages
	pointer    pointer // where the output is in the answer
	errPointer pointer // where the provider's error message is; nil: none
	output     map[string]any
	cred       *credential
}

// normalize is the tool's Normalize.
func (rr *responseReader) normalize(resp UpstreamResponse) (any, error) {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, rr.failed(resp)
	}
	doc, ok := decodeAnswer(resp.Body)
	if !ok {
		if len(bytes.TrimSpace(resp.Body)) == 0 {
			return nil, Upstreamf(CodeUpstreamInvalidResponse, "%s returned an empty body", rr.provider)
		}
		return nil, Upstreamf(CodeUpstreamInvalidResponse, "%s returned a body that is not JSON", rr.provider)
	}
	v, ok := rr.pointer.resolve(doc)
	if !ok {
		return nil, Upstreamf(CodeUpstreamInvalidResponse, "%s returned an answer with nothing at %s", rr.provider, rr.pointer)
	}
	return rr.cred.redactor().Value(project(v, rr.output, rr.output, 0)), nil
}

// failed reports a provider's error status. The message is ours; the
// provider's own message follows as a short, cleaned excerpt, labelled as
// the provider's, since it is untrusted text that reaches the caller.
func (rr *responseReader) failed(resp UpstreamResponse) *UpstreamError {
	msg := fmt.Sprintf("%s answered HTTP %d", rr.provider, resp.StatusCode)
	if text := http.StatusText(resp.StatusCode); text != "" {
		msg += " " + text
	}
	// Redacted before it is cut, so the cut cannot leave a piece of the key
	// the redaction no longer knows; the cut text is checked again for any
	// run of it (see redact.Secrets.Excerpt).
	reason := rr.cred.redactor().Excerpt(rr.providerMessage(resp.Body), excerptText)
	if reason != "" {
		msg += "; provider message: " + reason
	}
	return &UpstreamError{Code: CodeUpstreamError, Message: msg}
}

// providerMessage is the provider's message in an error answer: the string
// at errorMessagePointer in a JSON answer, or the text of an answer that is
// not JSON (a proxy's page, a plain-text error); nothing otherwise.
func (rr *responseReader) providerMessage(body []byte) string {
	doc, ok := decodeAnswer(body)
	if !ok {
		return string(body)
	}
	if rr.errPointer == nil {
		return ""
	}
	v, ok := rr.errPointer.resolve(doc)
	if !ok {
		return ""
	}
	switch m := v.(type) {
	case string:
		return m
	case json.Number:
		return m.String()
	}
	return ""
}

// decodeAnswer decodes a provider's body as one JSON document, numbers kept
// exactly as the provider wrote them.
func decodeAnswer(body []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return doc, true
}

// maxProjectDepth bounds how far $ref chains are followed while projecting.
const maxProjectDepth = 64

// project keeps of v what schema declares: for an object, the members
// named in properties (each projected by its own schema), and others only
// when additionalProperties gives them a schema or allows them outright;
// for an array, each element projected by items. Local $refs are
// followed. Any other value, or a schema that declares no shape, leaves v
// as it is; validation against the schema decides the rest.
func project(v any, schema, root map[string]any, depth int) any {
	if schema == nil || depth > maxProjectDepth {
		return v
	}
	if ref, ok := schema["$ref"].(string); ok {
		if p, err := parsePointer(strings.TrimPrefix(ref, "#")); err == nil && strings.HasPrefix(ref, "#") {
			if target, ok := p.resolve(root); ok {
				sub, _ := target.(map[string]any)
				return project(v, sub, root, depth+1)
			}
		}
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		props, hasProps := schema["properties"].(map[string]any)
		extra, hasExtra := schema["additionalProperties"]
		if !hasProps && !hasExtra {
			return x
		}
		out := make(map[string]any, len(x))
		for k, child := range x {
			if ps, ok := props[k]; ok {
				sub, _ := ps.(map[string]any)
				out[k] = project(child, sub, root, depth+1)
				continue
			}
			switch e := extra.(type) {
			case map[string]any:
				out[k] = project(child, e, root, depth+1)
			case bool:
				if e {
					out[k] = child
				}
			}
		}
		return out
	case []any:
		items, ok := schema["items"].(map[string]any)
		if !ok {
			return x
		}
		out := make([]any, len(x))
		for i, child := range x {
			out[i] = project(child, items, root, depth+1)
		}
		return out
	}
	return v
}
