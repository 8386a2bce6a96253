package registry

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/shopspring/decimal"
)

// ParseOptions are what parsing a manifest needs from its surroundings. A
// nil *ParseOptions means the defaults.
type ParseOptions struct {
	// OperatorOrigins are the origins the operator configured, by tool slug
	// (the server's "upstreams"). A manifest's own origin must use HTTPS
	// unless its slug is named here: the operator then chose where its
	// requests go, plain HTTP included. Parsing does not apply the origin;
	// register the tool, then call Registry.SetOrigin, as the server does.
	OperatorOrigins map[string]string
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// ReadFile reads a credential file; nil means os.ReadFile.
	ReadFile func(name string) ([]byte, error)
}

func (o *ParseOptions) withDefaults() ParseOptions {
	var c ParseOptions
	if o != nil {
		c = *o
	}
	if c.LookupEnv == nil {
		c.LookupEnv = os.LookupEnv
	}
	if c.ReadFile == nil {
		c.ReadFile = os.ReadFile
	}
	return c
}

// manifestFile is a toolgate.tool/v1 manifest as written. The format's
// schema has checked its shape before it is decoded into this.
type manifestFile struct {
	Schema        string              `json:"$schema"`
	SchemaVersion string              `json:"schemaVersion"`
	Slug          string              `json:"slug"`
	Name          string              `json:"name"`
	Description   string              `json:"description"`
	Category      string              `json:"category"`
	Tags          []string            `json:"tags"`
	Version       int                 `json:"version"`
	Provider      manifestProvider    `json:"provider"`
	Endpoint      manifestEndpoint    `json:"endpoint"`
	Credential    *manifestCredential `json:"credential"`
	Pricing       manifestPricing     `json:"pricing"`
	Capabilities  *Capabilities       `json:"capabilities"`
	InputSchema   json.RawMessage     `json:"inputSchema"`
	OutputSchema  json.RawMessage     `json:"outputSchema"`
	Output        manifestOutput      `json:"output"`
	Examples      []manifestExample   `json:"examples"`
}

type manifestProvider struct {
	Name      string `json:"name"`
	TrustTier string `json:"trustTier"`
}

type manifestEndpoint struct {
	Origin  string            `json:"origin"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   map[string]string `json:"query"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

type manifestCredential struct {
	Header string `json:"header"`
	Scheme string `json:"scheme"`
	Env    string `json:"env"`
	File   string `json:"file"`
}

type manifestPricing struct {
	Type     string `json:"type"`
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

type manifestOutput struct {
	Pointer             *string `json:"pointer"`
	ErrorMessagePointer *string `json:"errorMessagePointer"`
}

type manifestExample struct {
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output"`
}

// ParseManifest parses one toolgate.tool/v1 manifest into a tool ready to
// register: an immutable version whose BuildRequest and Normalize follow
// the manifest, with its credential, if any, read now from the environment
// or its file. file names the manifest in errors.
//
// Parsing is strict. Every mistake is a *ManifestError naming the file, the
// JSON path and the reason: an unknown field, a field the format lacks (a
// manifest cannot mark itself verified), a placeholder naming no input
// field, an origin without HTTPS that the operator did not configure, an
// invalid schema or amount, a credential that cannot be read.
func ParseManifest(file string, data []byte, opts *ParseOptions) (*Tool, error) {
	o := opts.withDefaults()
	doc, err := decodeManifestJSON(file, data)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(file, data, doc); err != nil {
		return nil, err
	}
	var m manifestFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		// The format's schema admits only what decodes; this is a bug.
		return nil, manifestErrorf(file, "", "does not decode: %v", err)
	}
	p := manifestParser{file: file, m: &m, opts: o}
	return p.tool()
}

// manifestParser checks a decoded manifest and builds its tool.
type manifestParser struct {
	file  string
	m     *manifestFile
	opts  ParseOptions
	props map[string]map[string]any // the input schema's properties
}

func (p *manifestParser) errorf(path jsonPath, format string, args ...any) error {
	return manifestErrorf(p.file, path, format, args...)
}

func (p *manifestParser) tool() (*Tool, error) {
	m := p.m
	origin, err := p.origin()
	if err != nil {
		return nil, err
	}
	in, inDoc, err := p.schema("inputSchema", m.InputSchema)
	if err != nil {
		return nil, err
	}
	if t, _ := inDoc["type"].(string); t != "object" {
		return nil, p.errorf("inputSchema", `must describe an object ("type": "object"), whose properties placeholders name`)
	}
	p.props = map[string]map[string]any{}
	if props, ok := inDoc["properties"].(map[string]any); ok {
		for name, s := range props {
			sub, _ := s.(map[string]any)
			p.props[name] = sub
		}
	}
	out, outDoc, err := p.schema("outputSchema", m.OutputSchema)
	if err != nil {
		return nil, err
	}
	rt := &requestTemplate{method: m.Endpoint.Method, defaults: map[string]any{}}
	for name, s := range p.props {
		if d, ok := s["default"]; ok {
			rt.defaults[name] = d
		}
	}
	if rt.segments, err = p.pathTemplate(inDoc); err != nil {
		return nil, err
	}
	if rt.query, err = p.queryTemplates(); err != nil {
		return nil, err
	}
	if rt.body, err = p.bodyTemplate(); err != nil {
		return nil, err
	}
	pricing, err := p.pricing()
	if err != nil {
		return nil, err
	}
	rr := &responseReader{provider: m.Provider.Name, output: outDoc}
	if rr.pointer, err = p.pointer("output.pointer", m.Output.Pointer); err != nil {
		return nil, err
	}
	if m.Output.ErrorMessagePointer != nil {
		if rr.errPointer, err = p.pointer("output.errorMessagePointer", m.Output.ErrorMessagePointer); err != nil {
			return nil, err
		}
	}
	exampleIn, exampleOut, err := p.examples(in, out)
	if err != nil {
		return nil, err
	}
	// The credential is read last, once everything else is known to be
	// right, so a mistake elsewhere is reported first.
	if rt.headers, err = p.headerTemplates(); err != nil {
		return nil, err
	}
	if m.Credential != nil {
		if reservedHeaders[http.CanonicalHeaderKey(m.Credential.Header)] {
			return nil, p.errorf("credential.header", "is set by the gateway's HTTP client; use the header the provider names for its key")
		}
		c, err := resolveCredential(p.file, "credential", *m.Credential, p.opts)
		if err != nil {
			return nil, err
		}
		rt.cred, rr.cred = &c, &c
	}

	tier := m.Provider.TrustTier
	if tier == "" {
		tier = "unverified"
	}
	h := &HTTPTemplate{Query: m.Endpoint.Query, Headers: m.Endpoint.Headers, Body: compactJSON(m.Endpoint.Body)}
	if m.Credential != nil {
		h.CredentialHeader, h.CredentialScheme = m.Credential.Header, m.Credential.Scheme
	}
	if m.Output.Pointer != nil {
		h.OutputPointer = *m.Output.Pointer
	}
	if m.Output.ErrorMessagePointer != nil {
		h.ErrorMessagePointer = *m.Output.ErrorMessagePointer
	}
	return &Tool{
		Slug:          m.Slug,
		Name:          m.Name,
		Description:   m.Description,
		Category:      m.Category,
		Tags:          m.Tags,
		Provider:      Provider{Name: m.Provider.Name, TrustTier: tier},
		Endpoint:      Endpoint{Origin: origin, Method: m.Endpoint.Method, Path: m.Endpoint.Path},
		Version:       m.Version,
		Immutable:     true,
		Capabilities:  m.Capabilities,
		Pricing:       pricing,
		InputSchema:   m.InputSchema,
		OutputSchema:  m.OutputSchema,
		BuildRequest:  rt.build,
		Normalize:     rr.normalize,
		HTTP:          h,
		ExampleInput:  exampleIn,
		ExampleOutput: exampleOut,
	}, nil
}

// origin checks endpoint.origin: scheme://host[:port], HTTPS unless the
// operator configured an origin for this tool.
func (p *manifestParser) origin() (string, error) {
	origin := strings.TrimSuffix(p.m.Endpoint.Origin, "/")
	if err := validateOrigin(origin); err != nil {
		return "", p.errorf("endpoint.origin", "must be scheme://host[:port], with nothing after the host")
	}
	u, _ := url.Parse(origin)
	if u.Scheme != "https" {
		if _, ok := p.opts.OperatorOrigins[p.m.Slug]; !ok {
			return "", p.errorf("endpoint.origin", "must use https; plain http is allowed only when the operator's config names an origin for %s (upstreams.%s)", p.m.Slug, p.m.Slug)
		}
	}
	return origin, nil
}

// schema compiles one of the manifest's JSON Schemas and returns it with
// its decoded document.
func (p *manifestParser) schema(path jsonPath, raw json.RawMessage) (*Schema, map[string]any, error) {
	s, err := CompileSchema(raw)
	if err != nil {
		return nil, nil, p.errorf(path, "is not a usable JSON Schema: %s", strings.TrimPrefix(err.Error(), "registry: "))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, p.errorf(path, "is not a JSON object")
	}
	return s, doc, nil
}

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
func (p *manifestParser) pathTemplate(inDoc map[string]any) ([]template, error) {
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
			return nil, p.errorf(at, "%v", err)
		}
		for _, part := range t.parts {
			if part.literal != "" && !validPathLiteral(part.literal) {
				return nil, p.errorf(at, "has %q, which is not valid in a URL path (escape it as %%XX; no query or fragment)", part.literal)
			}
		}
		if seg == "." || seg == ".." {
			return nil, p.errorf(at, "has a %q segment", seg)
		}
		for _, f := range t.fields() {
			if err := p.placeholder(at, f, true); err != nil {
				return nil, err
			}
			if _, hasDefault := p.props[f]["default"]; !required[f] && !hasDefault {
				return nil, p.errorf(at, "{%s} must be a required input field or have a default: a path cannot leave it out", f)
			}
		}
		segments = append(segments, t)
	}
	return segments, nil
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
func (p *manifestParser) queryTemplates() ([]namedTemplate, error) {
	var out []namedTemplate
	for _, name := range sortedKeys(p.m.Endpoint.Query) {
		at := jsonPath("endpoint.query").key(name)
		if name == "" || strings.ContainsAny(name, "{}") {
			return nil, p.errorf(at, "a query parameter's name must be literal text")
		}
		t, err := compileTemplate(p.m.Endpoint.Query[name])
		if err != nil {
			return nil, p.errorf(at, "%v", err)
		}
		for _, f := range t.fields() {
			if err := p.placeholder(at, f, true); err != nil {
				return nil, err
			}
		}
		out = append(out, namedTemplate{name: name, value: t})
	}
	return out, nil
}

// reservedHeaders are set by the HTTP stack or frame the message; a
// manifest that set them could smuggle a second request or confuse a proxy.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Upgrade": true,
	"Te": true, "Trailer": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authorization": true,
	"Expect": true,
}

// headerTemplates compiles endpoint.headers.
func (p *manifestParser) headerTemplates() ([]namedTemplate, error) {
	var out []namedTemplate
	for _, name := range sortedKeys(p.m.Endpoint.Headers) {
		at := jsonPath("endpoint.headers").key(name)
		canonical := http.CanonicalHeaderKey(name)
		switch {
		case !validToken(name):
			return nil, p.errorf(at, "is not a valid HTTP header name")
		case reservedHeaders[canonical]:
			return nil, p.errorf(at, "is set by the gateway's HTTP client; a manifest cannot set it")
		case p.m.Credential != nil && http.CanonicalHeaderKey(p.m.Credential.Header) == canonical:
			return nil, p.errorf(at, "is the credential's header, which only the credential sets")
		}
		value := p.m.Endpoint.Headers[name]
		t, err := compileTemplate(value)
		if err != nil {
			return nil, p.errorf(at, "%v", err)
		}
		if !validHeaderValue(value) {
			return nil, p.errorf(at, "holds a line break or another control character")
		}
		for _, f := range t.fields() {
			if err := p.placeholder(at, f, true); err != nil {
				return nil, err
			}
		}
		out = append(out, namedTemplate{name: canonical, value: t})
	}
	return out, nil
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
func (p *manifestParser) bodyTemplate() (bodyTemplate, error) {
	const at = jsonPath("endpoint.body")
	raw := p.m.Endpoint.Body
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return bodyTemplate{kind: bodyNone}, nil
	}
	if m := p.m.Endpoint.Method; m == http.MethodGet || m == http.MethodDelete {
		return bodyTemplate{}, p.errorf(at, "a %s request has no body", m)
	}
	if string(bytes.TrimSpace(raw)) == `"input"` {
		return bodyTemplate{kind: bodyInput}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return bodyTemplate{}, p.errorf(at, `must be "input" or an object template`)
	}
	compiled, err := p.compileBody(at, tree)
	if err != nil {
		return bodyTemplate{}, err
	}
	return bodyTemplate{kind: bodyObject, tree: compiled}, nil
}

// compileBody turns the string leaves of a body template into templates.
func (p *manifestParser) compileBody(at jsonPath, node any) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, child := range n {
			v, err := p.compileBody(at.key(k), child)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, child := range n {
			v, err := p.compileBody(at.index(i), child)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case string:
		t, err := compileTemplate(n)
		if err != nil {
			return nil, p.errorf(at, "%v", err)
		}
		_, whole := t.whole()
		for _, f := range t.fields() {
			if err := p.placeholder(at, f, !whole); err != nil {
				return nil, err
			}
		}
		return t, nil
	}
	return node, nil
}

// pricing checks the price: a free tool costs nothing, a paid one something.
func (p *manifestParser) pricing() (Pricing, error) {
	pr := p.m.Pricing
	amount := decimal.Zero
	if pr.Amount != "" {
		d, err := decimal.NewFromString(pr.Amount)
		if err != nil {
			return Pricing{}, p.errorf("pricing.amount", "is not a decimal amount")
		}
		amount = d
	}
	switch {
	case pr.Type == PricingFree && !amount.IsZero():
		return Pricing{}, p.errorf("pricing.amount", "must be 0 (or left out) for a free tool")
	case pr.Type == PricingPerCall && !amount.IsPositive():
		return Pricing{}, p.errorf("pricing.amount", "must be more than 0 for a per_call tool")
	}
	return Pricing{Type: pr.Type, Amount: amount, Currency: "USD"}, nil
}

// pointer parses an RFC 6901 pointer; nil means the whole answer.
func (p *manifestParser) pointer(at jsonPath, s *string) (pointer, error) {
	if s == nil {
		return pointer{}, nil
	}
	ptr, err := parsePointer(*s)
	if err != nil {
		return nil, p.errorf(at, "%v", err)
	}
	return ptr, nil
}

// examples checks every example against the tool's schemas, so that the
// documentation never shows a call the tool would refuse, and returns the
// first, which the documentation shows.
func (p *manifestParser) examples(in, out *Schema) (json.RawMessage, json.RawMessage, error) {
	for i, ex := range p.m.Examples {
		at := jsonPath("examples").index(i)
		if fails := in.Validate(ex.Input, string(at.key("input"))); fails != nil {
			return nil, nil, p.errorf(jsonPath(fails[0].Path), "the example does not fit inputSchema: %s", fails[0].Message)
		}
		if len(ex.Output) > 0 {
			if fails := out.Validate(ex.Output, string(at.key("output"))); fails != nil {
				return nil, nil, p.errorf(jsonPath(fails[0].Path), "the example does not fit outputSchema: %s", fails[0].Message)
			}
		}
	}
	if len(p.m.Examples) == 0 {
		return nil, nil, nil
	}
	return compactJSON(p.m.Examples[0].Input), compactJSON(p.m.Examples[0].Output), nil
}

// compactJSON removes insignificant white space; nil stays nil.
func compactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
