package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolgate/toolgate/internal/tokenexchange"
)

// requestTemplate builds a manifest tool's upstream request from a call's
// input. It is compiled once, when the manifest is parsed; building a
// request only fills in values.
type requestTemplate struct {
	method   string
	segments []template // the path's segments, between its slashes
	query    []namedTemplate
	headers  []namedTemplate
	body     bodyTemplate
	defaults map[string]any // the input schema's top-level defaults
	cred     *credential    // nil when the tool sends none
}

// namedTemplate is one query parameter or header: a literal name and a
// value template.
type namedTemplate struct {
	name  string
	value template
}

// bodyTemplate is a request body: none, the input itself, or an object
// template whose string leaves are templates.
type bodyTemplate struct {
	kind bodyKind
	tree any // for bodyObject: maps, slices, scalars and template leaves
}

type bodyKind int

const (
	bodyNone bodyKind = iota
	bodyInput
	bodyObject
)

// errInput is a value in a call's input that cannot go where its
// placeholder puts it. The gateway reports every BuildRequest error as a
// failed, uncharged execution.
var errInput = errors.New("input value refused")

// build is the tool's BuildRequest: the request to origin, the tool's origin
// in force, with the input's values placed, each escaped for where it goes.
func (rt *requestTemplate) build(ctx context.Context, origin string, raw json.RawMessage) (*http.Request, error) {
	input, err := decodeInputObject(raw)
	if err != nil {
		return nil, err
	}
	for name, v := range rt.defaults {
		if _, ok := input[name]; !ok {
			input[name] = v
		}
	}
	path, err := rt.path(input)
	if err != nil {
		return nil, err
	}
	target := strings.TrimSuffix(origin, "/") + path
	q := url.Values{}
	for _, p := range rt.query {
		// url.Values encodes every value whole: an input value cannot add
		// a parameter or end the query.
		v, present, err := p.value.render(input, identity)
		if err != nil {
			return nil, fmt.Errorf("%w: query parameter %s: %v", errInput, p.name, err)
		}
		if present {
			q.Add(p.name, v)
		}
	}
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var body io.Reader
	var encoded []byte
	switch rt.body.kind {
	case bodyInput:
		if encoded, err = json.Marshal(input); err != nil {
			return nil, fmt.Errorf("%w: encode the body: %v", errInput, err)
		}
	case bodyObject:
		v, _, err := renderBody(rt.body.tree, input)
		if err != nil {
			return nil, err
		}
		if encoded, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("%w: encode the body: %v", errInput, err)
		}
	}
	if encoded != nil {
		// A byte reader lets the transport replay the body (GetBody).
		body = bytes.NewReader(encoded)
	}
	req, err := http.NewRequestWithContext(ctx, rt.method, target, body)
	if err != nil {
		return nil, fmt.Errorf("registry: build the upstream request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if encoded != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range rt.headers {
		v, present, err := h.value.render(input, identity)
		if err != nil {
			return nil, fmt.Errorf("%w: header %s: %v", errInput, h.name, err)
		}
		if !present {
			continue
		}
		if !validHeaderValue(v) {
			return nil, fmt.Errorf("%w: header %s: an input value holds a line break or another control character", errInput, h.name)
		}
		req.Header.Set(h.name, v)
	}
	// Last, so that nothing else can set or shadow these headers; and only
	// here, on a request to the tool's own origin (redirects are never
	// followed, so they go nowhere else). A token exchanged for the caller
	// (TokenExchange) stands in for the key, which is for key callers.
	if tok, ok := tokenexchange.UpstreamToken(ctx); ok {
		req.Header.Set("Authorization", "Bearer "+tok)
	} else if rt.cred != nil {
		req.Header.Set(rt.cred.header, rt.cred.headerValue())
	}
	return req, nil
}

func identity(s string) string { return s }

// path renders the path template. Each input value is escaped as a path
// segment, so a "/", "?" or "#" in it stays data; a segment made from input
// that comes out empty, "." or ".." is refused, since it would change which
// resource the path names.
func (rt *requestTemplate) path(input map[string]any) (string, error) {
	var b strings.Builder
	for _, seg := range rt.segments {
		b.WriteByte('/')
		v, present, err := seg.render(input, url.PathEscape)
		if err != nil {
			return "", fmt.Errorf("%w: path: %v", errInput, err)
		}
		if !present {
			return "", fmt.Errorf("%w: path: the input lacks %s", errInput, strings.Join(seg.fields(), ", "))
		}
		if len(seg.fields()) > 0 && (v == "" || v == "." || v == "..") {
			return "", fmt.Errorf("%w: path: an input value would make the segment %q", errInput, v)
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// renderBody fills an object template. A leaf that is exactly one
// placeholder takes the input value with its JSON type; other string leaves
// take text. A member or element whose field is absent is left out.
func renderBody(node any, input map[string]any) (out any, present bool, err error) {
	switch n := node.(type) {
	case map[string]any:
		obj := make(map[string]any, len(n))
		for k, child := range n {
			v, ok, err := renderBody(child, input)
			if err != nil {
				return nil, false, err
			}
			if ok {
				obj[k] = v
			}
		}
		return obj, true, nil
	case []any:
		arr := make([]any, 0, len(n))
		for _, child := range n {
			v, ok, err := renderBody(child, input)
			if err != nil {
				return nil, false, err
			}
			if ok {
				arr = append(arr, v)
			}
		}
		return arr, true, nil
	case template:
		if field, ok := n.whole(); ok {
			v, ok := input[field]
			return v, ok, nil
		}
		s, ok, err := n.render(input, identity)
		if err != nil {
			return nil, false, fmt.Errorf("%w: body: %v", errInput, err)
		}
		return s, ok, nil
	}
	return node, true, nil
}

// decodeInputObject decodes a call input, numbers kept as written.
func decodeInputObject(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var input map[string]any
	if err := dec.Decode(&input); err != nil || input == nil {
		return nil, fmt.Errorf("%w: the input is not a JSON object", errInput)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the input object", errInput)
	}
	return input, nil
}
