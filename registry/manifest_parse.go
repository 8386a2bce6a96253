package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/toolgatetype"
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
	Auth          *manifestAuth       `json:"auth"`
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
// invalid schema or amount, a credential that cannot be read. The first
// mistake is returned; CheckManifest finds them all.
func ParseManifest(file string, data []byte, opts *ParseOptions) (*Tool, error) {
	c := checkManifest(file, data, opts, false)
	switch {
	case len(c.Errors) > 0:
		return nil, c.Errors[0]
	case c.Credential != nil:
		return nil, c.Credential
	}
	return c.Tool, nil
}

// ManifestCheck is what CheckManifest found in a manifest.
type ManifestCheck struct {
	// Tool is the manifest's tool when Errors is empty, nil otherwise.
	// When Credential is set it holds no credential: it is for looking at
	// (its entry, its digest), never for serving calls.
	Tool *Tool
	// Errors is every mistake in the manifest, in the order ParseManifest
	// meets them (it reports the first): where it does not fit the
	// format's schema first, one per JSON path, then what the other checks
	// find elsewhere (a placeholder naming no input field, an origin
	// without HTTPS). A value that is not JSON of the right kind for its
	// field is left out of those checks.
	Errors []*ManifestError
	// Credential says why the credential could not be read from where the
	// manifest says (an environment variable not set or empty, a file
	// missing, unreadable or empty, a value with a line break); nil when it
	// was read, or the manifest has none. It is about the environment the
	// manifest is read in rather than the manifest: ParseManifest, and so
	// the server, refuses the manifest until it is fixed.
	Credential *ManifestError
}

// CheckManifest checks a manifest as ParseManifest does, but goes on past
// a mistake to find every one, and tells an unreadable credential apart
// from the mistakes, so that a manifest can be checked where its secret is
// not. It reads the credential, as ParseManifest does, to say whether it
// could; the value is never part of what it returns but in Tool.
func CheckManifest(file string, data []byte, opts *ParseOptions) ManifestCheck {
	return checkManifest(file, data, opts, true)
}

// checkManifest is ParseManifest and CheckManifest. ParseManifest reads the
// credential only once everything else is known to be right, so a mistake
// elsewhere is reported first and a manifest with mistakes reads no
// secret; CheckManifest (readAnyway) reads it whatever else it found.
func checkManifest(file string, data []byte, opts *ParseOptions, readAnyway bool) ManifestCheck {
	o := opts.withDefaults()
	doc, err := decodeManifestJSON(file, data)
	if err != nil {
		return ManifestCheck{Errors: []*ManifestError{asManifestError(file, err)}}
	}
	misfits := formatFailures(file, data, doc)
	var m manifestFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if len(misfits) == 0 {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if len(misfits) == 0 {
			// The format's schema admits only what decodes; this is a bug.
			return ManifestCheck{Errors: []*ManifestError{manifestErrorf(file, "", "does not decode: %v", err)}}
		}
		if !errors.As(err, &typeErr) {
			return ManifestCheck{Errors: misfits}
		}
		// A value of the wrong type, already a misfit, is left at its zero
		// value and the rest decoded: the other checks can still run.
	}
	// The checks go on past the misfits, so that one run finds every
	// mistake: a misspelt field and a bad template are fixed together.
	p := manifestParser{file: file, m: &m, opts: o, readAnyway: readAnyway, errs: misfits, misfits: misfits}
	t := p.tool()
	return ManifestCheck{Tool: t, Errors: p.errs, Credential: p.credErr}
}

// asManifestError is err as a *ManifestError of file.
func asManifestError(file string, err error) *ManifestError {
	var me *ManifestError
	if errors.As(err, &me) {
		return me
	}
	return manifestErrorf(file, "", "%v", err)
}

// manifestParser checks a decoded manifest and builds its tool. Each check
// records what it finds wrong and goes on where it can, so that one pass
// finds every mistake; a check that needs what an earlier one refused (the
// placeholders, the input schema) is skipped.
type manifestParser struct {
	file  string
	m     *manifestFile
	opts  ParseOptions
	props map[string]map[string]any // the input schema's properties
	// readAnyway reads the credential even when mistakes were found.
	readAnyway bool
	errs       []*ManifestError
	credErr    *ManifestError
	// misfits are where the manifest does not fit the format's schema. A
	// check's finding at, in or around one of them is dropped: the misfit
	// already says what is wrong there, and better.
	misfits []*ManifestError
}

func (p *manifestParser) errorf(path jsonPath, format string, args ...any) error {
	return manifestErrorf(p.file, path, format, args...)
}

// fail records a mistake, unless a misfit covers it.
func (p *manifestParser) fail(err error) {
	me := asManifestError(p.file, err)
	if p.misfit(jsonPath(me.Path)) {
		return
	}
	p.errs = append(p.errs, me)
}

// misfit reports whether path is, is inside or holds a value that does
// not fit the format.
func (p *manifestParser) misfit(path jsonPath) bool {
	for _, m := range p.misfits {
		if path.within(jsonPath(m.Path)) || jsonPath(m.Path).within(path) {
			return true
		}
	}
	return false
}

// tool runs every check and, when none failed, builds the tool.
func (p *manifestParser) tool() *Tool {
	m := p.m
	origin := p.origin()
	in, inDoc := p.schema("inputSchema", m.InputSchema)
	if inDoc != nil {
		if t, _ := inDoc["type"].(string); t != "object" {
			p.fail(p.errorf("inputSchema", `must describe an object ("type": "object"), whose properties placeholders name`))
			inDoc = nil
		}
	}
	p.props = map[string]map[string]any{}
	if props, ok := inDoc["properties"].(map[string]any); ok {
		for name, s := range props {
			sub, _ := s.(map[string]any)
			p.props[name] = sub
		}
	}
	out, outDoc := p.schema("outputSchema", m.OutputSchema)
	var rt *requestTemplate
	if inDoc != nil {
		// Without the input schema, every placeholder would seem wrong.
		rt = p.requestTemplate(inDoc)
	}
	var rr *responseReader
	if outDoc != nil {
		rr = p.responseReader(outDoc)
	}
	pricing := p.pricing()
	var exampleIn, exampleOut json.RawMessage
	if in != nil {
		exampleIn, exampleOut = p.examples(in, out)
	}
	// The credential comes last: see checkManifest.
	var cred *credential
	if m.Credential != nil {
		switch mc := *m.Credential; {
		case reservedHeaders[http.CanonicalHeaderKey(mc.Header)]:
			p.fail(p.errorf("credential.header", "is set by the gateway's HTTP client; use the header the provider names for its key"))
		case mc.File != "" && !filepath.IsAbs(mc.File):
			p.fail(p.errorf(jsonPath("credential").key("file"), "must be an absolute path"))
		case p.misfit("credential"):
			// Where to read it from is itself wrong.
		case len(p.errs) == 0 || p.readAnyway:
			c, err := readCredential(p.file, "credential", mc, p.opts)
			if err != nil {
				p.credErr = err
			} else {
				cred = &c
			}
		}
	}
	exchange := p.tokenExchange()
	if len(p.errs) > 0 {
		return nil
	}
	if cred != nil {
		rt.cred, rr.cred = cred, cred
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
		TokenExchange: exchange,
	}
}

// requestTemplate compiles the endpoint into the tool's request builder.
func (p *manifestParser) requestTemplate(inDoc map[string]any) *requestTemplate {
	rt := &requestTemplate{method: p.m.Endpoint.Method, defaults: map[string]any{}}
	for name, s := range p.props {
		if d, ok := s["default"]; ok {
			rt.defaults[name] = d
		}
	}
	rt.segments = p.pathTemplate(inDoc)
	rt.query = p.queryTemplates()
	rt.headers = p.headerTemplates()
	rt.body = p.bodyTemplate()
	return rt
}

// responseReader builds the tool's answer reader from output and the
// output schema.
func (p *manifestParser) responseReader(outDoc map[string]any) *responseReader {
	rr := &responseReader{provider: p.m.Provider.Name, output: outDoc}
	rr.pointer = p.pointer("output.pointer", p.m.Output.Pointer)
	if p.m.Output.ErrorMessagePointer != nil {
		rr.errPointer = p.pointer("output.errorMessagePointer", p.m.Output.ErrorMessagePointer)
	}
	return rr
}

// origin checks endpoint.origin: scheme://host[:port], HTTPS unless the
// operator configured an origin for this tool.
func (p *manifestParser) origin() string {
	origin := strings.TrimSuffix(p.m.Endpoint.Origin, "/")
	if err := validateOrigin(origin); err != nil {
		p.fail(p.errorf("endpoint.origin", "must be scheme://host[:port], with nothing after the host"))
		return ""
	}
	u, _ := url.Parse(origin)
	if u.Scheme != "https" {
		if _, ok := p.opts.OperatorOrigins[p.m.Slug]; !ok {
			p.fail(p.errorf("endpoint.origin", "must use https; plain http is allowed only when the operator's config names an origin for %s (upstreams.%s)", p.m.Slug, p.m.Slug))
			return ""
		}
	}
	return origin
}

// schema compiles one of the manifest's JSON Schemas and returns it with
// its decoded document; nil and nil when it is not usable.
func (p *manifestParser) schema(path jsonPath, raw json.RawMessage) (*Schema, map[string]any) {
	s, err := CompileSchema(raw)
	if err != nil {
		p.fail(p.errorf(path, "is not a usable JSON Schema: %s", strings.TrimPrefix(err.Error(), "registry: ")))
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		p.fail(p.errorf(path, "is not a JSON object"))
		return nil, nil
	}
	return s, doc
}

// pricing checks the price: a free tool costs nothing, a paid one something.
func (p *manifestParser) pricing() Pricing {
	pr := p.m.Pricing
	amount := decimal.Zero
	if pr.Amount != "" {
		// The format's pattern bounds the text already; ParseAmount holds
		// to the bound every amount keeps should the pattern ever widen.
		d, err := toolgatetype.ParseAmount(pr.Amount)
		if err != nil {
			p.fail(p.errorf("pricing.amount", "%v", err))
			return Pricing{}
		}
		amount = d
	}
	switch {
	case pr.Type == PricingFree && !amount.IsZero():
		p.fail(p.errorf("pricing.amount", "must be 0 (or left out) for a free tool"))
	case pr.Type == PricingPerCall && !amount.IsPositive():
		p.fail(p.errorf("pricing.amount", "must be more than 0 for a per_call tool"))
	}
	return Pricing{Type: pr.Type, Amount: amount, Currency: "USD"}
}

// pointer parses an RFC 6901 pointer; nil means the whole answer.
func (p *manifestParser) pointer(at jsonPath, s *string) pointer {
	if s == nil {
		return pointer{}
	}
	ptr, err := parsePointer(*s)
	if err != nil {
		p.fail(p.errorf(at, "%v", err))
		return nil
	}
	return ptr
}

// examples checks every example against the tool's schemas, so that the
// documentation never shows a call the tool would refuse, and returns the
// first, which the documentation shows. Each example's input and output
// get at most one error each: the first thing the schema finds. out is nil
// when the output schema is not usable.
func (p *manifestParser) examples(in, out *Schema) (json.RawMessage, json.RawMessage) {
	for i, ex := range p.m.Examples {
		at := jsonPath("examples").index(i)
		if fails := in.Validate(ex.Input, string(at.key("input"))); fails != nil {
			p.fail(p.errorf(jsonPath(fails[0].Path), "the example does not fit inputSchema: %s", fails[0].Message))
		}
		if len(ex.Output) > 0 && out != nil {
			if fails := out.Validate(ex.Output, string(at.key("output"))); fails != nil {
				p.fail(p.errorf(jsonPath(fails[0].Path), "the example does not fit outputSchema: %s", fails[0].Message))
			}
		}
	}
	if len(p.m.Examples) == 0 {
		return nil, nil
	}
	return compactJSON(p.m.Examples[0].Input), compactJSON(p.m.Examples[0].Output)
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
