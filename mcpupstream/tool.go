package mcpupstream

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/internal/redact"
	"github.com/toolgate/toolgate/registry"
)

// Slug is the slug of the tool name of server id: the name lowercased, every
// character outside a-z, 0-9 and "-" replaced by "-", after the id and a
// dot. The result may still not be a valid slug (a name starting with "_",
// say): such a tool is not served.
func Slug(id, name string) string {
	var b strings.Builder
	b.Grow(len(id) + 1 + len(name))
	b.WriteString(id)
	b.WriteByte('.')
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

var validSlug = regexp.MustCompile(`^[a-z0-9](?:-?[a-z0-9])*\.[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$`)

// ValidSlug reports whether slug has the shape of the slug of an upstream
// server's tool: a server id, a dot, and a name of lowercase letters,
// digits and dashes.
func ValidSlug(slug string) bool { return validSlug.MatchString(slug) }

// included reports whether the operator serves the upstream tool name.
func (s *Server) included(name string) bool {
	if t, ok := s.Tools[name]; ok && t.Enabled != nil && !*t.Enabled {
		return false
	}
	if s.Include == nil {
		return true
	}
	for _, g := range s.Include {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// contentSchema is the output schema of a tool that declares none: its
// output is the content blocks of its answer, as MCP shapes them, or the
// structured content an answer may carry all the same, of a shape nothing
// declares.
var contentSchema = json.RawMessage(`{"description":"The content blocks of the tool's answer, as MCP shapes them; ` +
	`or its structuredContent when it has one, of a shape the server does not declare.",` +
	`"anyOf":[{"type":"object","required":["content"],"additionalProperties":false,` +
	`"properties":{"content":{"type":"array","items":{"type":"object","required":["type"],"properties":{"type":{"type":"string"}}}}}},` +
	`{"description":"structuredContent"}]}`)

// definition is an upstream tool as it was served: what the digest covers.
type definition struct {
	Name         string               `json:"name"`
	Title        string               `json:"title,omitempty"`
	Description  string               `json:"description,omitempty"`
	InputSchema  any                  `json:"inputSchema"`
	OutputSchema any                  `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
}

// served is one upstream tool as the operator serves it: its definition
// and what the registry gets.
type served struct {
	name   string // on the upstream
	slug   string
	tool   *registry.Tool // Version, Invoke and the pin are set when registered
	digest string
	// retrySafe is the operator's word on whether its calls may be sent
	// again, nil when the operator said nothing (see registry.Trust).
	retrySafe *bool
	// pinRequired and pinned are the pin it was registered with.
	pinRequired bool
	pinned      string
}

// serve turns the tools an upstream listed into the tools the operator
// serves, by slug. Two names that map to one slug are an error naming
// both; a name that makes no valid slug is reported in skipped and left
// out. What the upstream says of a tool reaches callers, so the server's
// secrets are taken out of it first (withoutSecrets); a tool whose name
// holds one is left out too, since its slug would show it.
func (s *Server) serve(listed []*mcp.Tool, secrets *redact.Secrets) (tools map[string]*served, skipped []string, err error) {
	tools = map[string]*served{}
	for _, t := range listed {
		if t == nil || !s.included(t.Name) {
			continue
		}
		if secrets.Text(t.Name) != t.Name {
			skipped = append(skipped, t.Name)
			continue
		}
		t = withoutSecrets(t, secrets)
		slug := Slug(s.ID, t.Name)
		if !validSlug.MatchString(slug) {
			skipped = append(skipped, t.Name)
			continue
		}
		if other, taken := tools[slug]; taken {
			return nil, nil, fmt.Errorf("the tools %q and %q of server %s both map to the slug %s; serve only one (include, or enabled false)", other.name, t.Name, s.ID, slug)
		}
		sv, err := s.toolOf(t, slug)
		if err != nil {
			skipped = append(skipped, t.Name)
			continue
		}
		tools[slug] = sv
	}
	return tools, skipped, nil
}

// withoutSecrets is t with secrets taken out of its title, description,
// schemas and annotations: a copy when any held one.
func withoutSecrets(t *mcp.Tool, secrets *redact.Secrets) *mcp.Tool {
	if secrets.Empty() {
		return t
	}
	c := *t
	c.Title = secrets.Text(t.Title)
	c.Description = secrets.Text(t.Description)
	c.InputSchema = secrets.Value(t.InputSchema)
	c.OutputSchema = secrets.Value(t.OutputSchema)
	if t.Annotations != nil {
		a := *t.Annotations
		a.Title = secrets.Text(a.Title)
		c.Annotations = &a
	}
	return &c
}

// toolOf builds the registry tool of one upstream tool. Everything the
// upstream says is its definition; pricing, capabilities, provider and
// trust are the operator's.
func (s *Server) toolOf(t *mcp.Tool, slug string) (*served, error) {
	def := definition{Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations}
	raw, err := json.Marshal(def)
	if err != nil {
		return nil, err
	}
	canon, err := registry.Canonicalize(raw)
	if err != nil {
		return nil, err
	}
	input := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		if input, err = json.Marshal(t.InputSchema); err != nil {
			return nil, err
		}
	}
	output := contentSchema
	if t.OutputSchema != nil {
		if output, err = json.Marshal(t.OutputSchema); err != nil {
			return nil, err
		}
	}
	if _, err := registry.CompileSchema(input); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if _, err := registry.CompileSchema(output); err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}

	cfg := s.toolConfig(t.Name, slug)
	name := t.Title
	if strings.TrimSpace(name) == "" {
		name = t.Name
	}
	pricing := registry.Pricing{Type: registry.PricingFree, Amount: decimal.Zero, Currency: "USD"}
	if cfg.Pricing != nil {
		pricing = *cfg.Pricing
		if pricing.Currency == "" {
			pricing.Currency = "USD"
		}
	}
	provider := s.Provider.Name
	if provider == "" {
		provider = s.ID
	}
	tier := s.Provider.TrustTier
	if tier == "" {
		tier = "unverified"
	}
	tool := &registry.Tool{
		ID:          registry.StableID("tool:" + slug),
		Slug:        slug,
		Name:        name,
		Description: t.Description,
		Category:    "mcp",
		Tags:        []string{"mcp", s.ID},
		Provider: registry.Provider{
			ID:              registry.StableID("provider:" + provider),
			Name:            provider,
			TrustTier:       tier,
			PaymentVerified: cfg.Trust.PaymentVerified != nil && *cfg.Trust.PaymentVerified,
		},
		Endpoint: registry.Endpoint{
			Origin:   s.origin(),
			Verified: cfg.Trust.EndpointVerified != nil && *cfg.Trust.EndpointVerified,
		},
		Version:      1,
		Immutable:    true,
		Capabilities: cfg.Capabilities,
		Pricing:      pricing,
		InputSchema:  input,
		OutputSchema: output,
		Upstream: &registry.MCPUpstream{
			Server:     s.ID,
			Transport:  s.transportName(),
			Address:    s.address(),
			Definition: canon,
		},
	}
	digest, err := registry.ManifestOf(tool, tool.Endpoint.Origin).Digest()
	if err != nil {
		return nil, err
	}
	return &served{name: t.Name, slug: slug, tool: tool, digest: digest, retrySafe: cfg.Trust.RetrySafe}, nil
}

// toolConfig is the operator's word on one tool: the defaults, then the
// tool's own by upstream name, then the trust by slug.
func (s *Server) toolConfig(name, slug string) ToolConfig {
	c := s.Defaults
	if c.Capabilities != nil {
		caps := *c.Capabilities
		c.Capabilities = &caps
	}
	if t, ok := s.Tools[name]; ok {
		if t.Pricing != nil {
			c.Pricing = t.Pricing
		}
		if t.Capabilities != nil {
			c.Capabilities = mergeCapabilities(c.Capabilities, t.Capabilities)
		}
		c.Trust = mergeTrust(c.Trust, t.Trust)
	}
	if t, ok := s.Trust[slug]; ok {
		c.Trust = mergeTrust(c.Trust, t)
	}
	return c
}

// mergeCapabilities lays over's declared fields over base's.
func mergeCapabilities(base, over *registry.Capabilities) *registry.Capabilities {
	if base == nil {
		c := *over
		return &c
	}
	c := *base
	for _, f := range []struct{ dst, src **bool }{
		{&c.ReadOnly, &over.ReadOnly}, {&c.Destructive, &over.Destructive}, {&c.Idempotent, &over.Idempotent},
		{&c.OpenWorld, &over.OpenWorld}, {&c.ReadsPrivateData, &over.ReadsPrivateData},
		{&c.SeesUntrustedContent, &over.SeesUntrustedContent}, {&c.WritesExternalData, &over.WritesExternalData},
		{&c.SendsMessages, &over.SendsMessages}, {&c.SpendsMoney, &over.SpendsMoney},
		{&c.ExecutesCode, &over.ExecutesCode}, {&c.RequiresUserCredential, &over.RequiresUserCredential},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	if over.AllowedOutboundDomains != nil {
		c.AllowedOutboundDomains = over.AllowedOutboundDomains
	}
	if over.DataRetention != "" {
		c.DataRetention = over.DataRetention
	}
	return &c
}

// mergeTrust lays over's set fields over base's.
func mergeTrust(base, over registry.Trust) registry.Trust {
	if over.PaymentVerified != nil {
		base.PaymentVerified = over.PaymentVerified
	}
	if over.EndpointVerified != nil {
		base.EndpointVerified = over.EndpointVerified
	}
	if over.RetrySafe != nil {
		base.RetrySafe = over.RetrySafe
	}
	return base
}
