package registry

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
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
	rt, err := p.requestTemplate(inDoc)
	if err != nil {
		return nil, err
	}
	rr, err := p.responseReader(outDoc)
	if err != nil {
		return nil, err
	}
	pricing, err := p.pricing()
	if err != nil {
		return nil, err
	}
	exampleIn, exampleOut, err := p.examples(in, out)
	if err != nil {
		return nil, err
	}
	// The credential is read last, once everything else is known to be
	// right, so a mistake elsewhere is reported first.
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

// requestTemplate compiles the endpoint into the tool's request builder.
func (p *manifestParser) requestTemplate(inDoc map[string]any) (*requestTemplate, error) {
	rt := &requestTemplate{method: p.m.Endpoint.Method, defaults: map[string]any{}}
	for name, s := range p.props {
		if d, ok := s["default"]; ok {
			rt.defaults[name] = d
		}
	}
	var err error
	if rt.segments, err = p.pathTemplate(inDoc); err != nil {
		return nil, err
	}
	if rt.query, err = p.queryTemplates(); err != nil {
		return nil, err
	}
	if rt.headers, err = p.headerTemplates(); err != nil {
		return nil, err
	}
	if rt.body, err = p.bodyTemplate(); err != nil {
		return nil, err
	}
	return rt, nil
}

// responseReader builds the tool's answer reader from output and the
// output schema.
func (p *manifestParser) responseReader(outDoc map[string]any) (*responseReader, error) {
	rr := &responseReader{provider: p.m.Provider.Name, output: outDoc}
	var err error
	if rr.pointer, err = p.pointer("output.pointer", p.m.Output.Pointer); err != nil {
		return nil, err
	}
	if p.m.Output.ErrorMessagePointer != nil {
		if rr.errPointer, err = p.pointer("output.errorMessagePointer", p.m.Output.ErrorMessagePointer); err != nil {
			return nil, err
		}
	}
	return rr, nil
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
