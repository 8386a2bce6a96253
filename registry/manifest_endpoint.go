package registry

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// This file compiles a manifest's endpoint (path, query, headers, body)
// into its request template, checking every placeholder against the input
// schema as it goes.

// placeholder checks that a placeholder names an input property, and, when
// its value becomes text (in a path, a query, a header, or mixed with other
// text), that the property is a string, number, integer or boolean.
func (p *manifestParser) placeholder(path jsonPath, field string, asText bool) error {
	s, ok := p.props[field]
	if !ok {
		names := make([]string, 0, len(p.props))
		for name := range p.props {
			names = append(names, name)
		}
		sort.Strings(names)
		known := "it has none"
		if len(names) > 0 {
			known = "it has " + strings.Join(names, ", ")
		}
		return p.errorf(path, "{%s} names no property of inputSchema (%s)", field, known)
	}
	if asText && !scalarTyped(s) {
		return p.errorf(path, `{%s} becomes text here, so inputSchema.properties.%s must have "type" string, number, integer or boolean`, field, field)
	}
	return nil
}

// scalarTyped reports whether a property schema's type admits only
// values that have a text form.
func scalarTyped(s map[string]any) bool {
	var types []any
	switch t := s["type"].(type) {
	case string:
		types = []any{t}
	case []any:
		types = t
	}
	if len(types) == 0 {
		return false
	}
	for _, t := range types {
		switch t {
		case "string", "number", "integer", "boolean":
		default:
			return false
		}
	}
	return true
}

// pathTemplate compiles endpoint.path, segment by segment. Its literal
// text must already be a valid, normalized URL path; each placeholder must
// name a field the input always has (required, or with a default), since a
// path cannot leave a part out.
func (p *manifestParser) pathTemplate(inDoc map[string]any) []template {
	const at = jsonPath("endpoint.path")
	required := map[string]bool{}
	if req, ok := inDoc["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	raw := strings.Split(p.m.Endpoint.Path, "/")[1:] // the path starts with "/"
	segments := make([]template, 0, len(raw))
	for _, seg := range raw {
		t, err := compileTemplate(seg)
		if err != nil {
			p.fail(p.errorf(at, "%v", err))
			continue
		}
		for _, part := range t.parts {
			if part.literal != "" && !validPathLiteral(part.literal) {
				p.fail(p.errorf(at, "has %q, which is not valid in a URL path (escape it as %%XX; no query or fragment)", part.literal))
			}
		}
		if seg == "." || seg == ".." {
			p.fail(p.errorf(at, "has a %q segment", seg))
		}
		for _, f := range t.fields() {
			if err := p.placeholder(at, f, true); err != nil {
				p.fail(err)
				continue
			}
			if _, hasDefault := p.props[f]["default"]; !required[f] && !hasDefault {
				p.fail(p.errorf(at, "{%s} must be a required input field or have a default: a path cannot leave it out", f))
			}
		}
		segments = append(segments, t)
	}
	return segments
}

// validPathLiteral accepts the characters RFC 3986 allows in a path
// segment, and percent-escapes.
func validPathLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0:
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// queryTemplates compiles endpoint.query, in name order so requests are
// the same every time.
func (p *manifestParser) queryTemplates() []namedTemplate {
	var out []namedTemplate
	for _, name := range sortedKeys(p.m.Endpoint.Query) {
		at := jsonPath("endpoint.query").key(name)
		if name == "" || strings.ContainsAny(name, "{}") {
			p.fail(p.errorf(at, "a query parameter's name must be literal text"))
			continue
		}
		t, err := compileTemplate(p.m.Endpoint.Query[name])
		if err != nil {
			p.fail(p.errorf(at, "%v", err))
			continue
		}
		for _, f := range t.fields() {
			if err := p.placeholder(at, f, true); err != nil {
				p.fail(err)
			}
		}
		out = append(out, namedTemplate{name: name, value: t})
	}
	return out
}

// reservedHeaders are set by the HTTP stack or frame the message; a
// manifest that set them could smuggle a second request or confuse a proxy.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Upgrade": true,
	"Te": true, "Trailer": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authorization": true,
	"Expect": true,
}

// headerTemplates compiles endpoint.headers.
func (p *manifestParser) headerTemplates() []namedTemplate {
	var out []namedTemplate
	for _, name := range sortedKeys(p.m.Endpoint.Headers) {
		at := jsonPath("endpoint.headers").key(name)
		canonical := http.CanonicalHeaderKey(name)
		switch {
		case !validToken(name):
			p.fail(p.errorf(at, "is not a valid HTTP header name"))
			continue
		case reservedHeaders[canonical]:
			p.fail(p.errorf(at, "is set by the gateway's HTTP client; a manifest cannot set it"))
			continue
		case p.m.Credential != nil && http.CanonicalHeaderKey(p.m.Credential.Header) == canonical:
			p.fail(p.errorf(at, "is the credential's header, which only the credential sets"))
			continue
		}
		value := p.m.Endpoint.Headers[name]
		t, err := compileTemplate(value)
		if err != nil {
			p.fail(p.errorf(at, "%v", err))
			continue
		}
		if !validHeaderValue(value) {
			p.fail(p.errorf(at, "holds a line break or another control character"))
			continue
		}
		for _, f := range t.fields() {
			if err := p.placeholder(at, f, true); err != nil {
				p.fail(err)
			}
		}
		out = append(out, namedTemplate{name: canonical, value: t})
	}
	return out
}

// validToken reports whether s is an HTTP token (RFC 9110), as header names are.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// bodyTemplate compiles endpoint.body.
func (p *manifestParser) bodyTemplate() bodyTemplate {
	const at = jsonPath("endpoint.body")
	raw := p.m.Endpoint.Body
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return bodyTemplate{kind: bodyNone}
	}
	if m := p.m.Endpoint.Method; m == http.MethodGet || m == http.MethodDelete {
		p.fail(p.errorf(at, "a %s request has no body", m))
		return bodyTemplate{}
	}
	if string(bytes.TrimSpace(raw)) == `"input"` {
		return bodyTemplate{kind: bodyInput}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		p.fail(p.errorf(at, `must be "input" or an object template`))
		return bodyTemplate{}
	}
	return bodyTemplate{kind: bodyObject, tree: p.compileBody(at, tree)}
}

// compileBody turns the string leaves of a body template into templates,
// members in name order, so that its mistakes are listed in the same
// order every time.
func (p *manifestParser) compileBody(at jsonPath, node any) any {
	switch n := node.(type) {
	case map[string]any:
		out := make(map[string]any, len(n))
		for _, k := range slices.Sorted(maps.Keys(n)) {
			out[k] = p.compileBody(at.key(k), n[k])
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, child := range n {
			out[i] = p.compileBody(at.index(i), child)
		}
		return out
	case string:
		t, err := compileTemplate(n)
		if err != nil {
			p.fail(p.errorf(at, "%v", err))
			return nil
		}
		_, whole := t.whole()
		for _, f := range t.fields() {
			if err := p.placeholder(at, f, !whole); err != nil {
				p.fail(err)
			}
		}
		return t
	}
	return node
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
